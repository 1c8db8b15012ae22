/* The "cudnn" kernel's query functions (kernels/cudnn/README.md). C linkage, so that a harness or
 * a plugin can look them up with dlsym as well as call them. */
#ifndef ATTNGATE_CUDNN_KERNEL_H
#define ATTNGATE_CUDNN_KERNEL_H

#ifdef __cplusplus
extern "C" {
#endif

/* Why the calling thread's last launch of the cudnn kernel failed or declined the problem (the
 * failing call with file:line, or cuDNN's reason), or "" after a successful launch. */
const char* attngate_cudnn_last_error(void);

/* The cuDNN that runs, as "libcudnn 9.14.0 (<path of the loaded library>), built with cuDNN 9.14.0
 * headers and cudnn-frontend 1.32.0": what the report records. */
const char* attngate_cudnn_version(void);

/* cudnnGetVersion() of the loaded library, e.g. 91400. */
long attngate_cudnn_runtime_version(void);

/* Graphs built so far (one per shape, device and layout; tests check that they are reused). */
long attngate_cudnn_cached_graphs(void);

#ifdef __cplusplus
}
#endif

#endif /* ATTNGATE_CUDNN_KERNEL_H */
