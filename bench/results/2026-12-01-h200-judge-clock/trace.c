// LD_PRELOAD shim: logs every path a process opens, stats or lists (to find what CUDA needs).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dirent.h>
static void logp(const char* fn, const char* p, int flags) {
  const char* f = getenv("TRACE_OUT");
  if (!f || !p) return;
  int fd = ((int (*)(const char*, int, ...))dlsym(RTLD_NEXT, "open"))(f, O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (fd < 0) return;
  char buf[4200];
  int n = snprintf(buf, sizeof buf, "%s %s %s\n", fn, (flags & (O_WRONLY | O_RDWR | O_CREAT)) ? "W" : "R", p);
  write(fd, buf, n);
  close(fd);
}
#define WRAP_OPEN(name) \
  int name(const char* p, int fl, ...) { va_list a; va_start(a, fl); int m = va_arg(a, int); va_end(a); logp(#name, p, fl); \
    return ((int (*)(const char*, int, ...))dlsym(RTLD_NEXT, #name))(p, fl, m); }
WRAP_OPEN(open) WRAP_OPEN(open64)
#define WRAP_OPENAT(name) \
  int name(int d, const char* p, int fl, ...) { va_list a; va_start(a, fl); int m = va_arg(a, int); va_end(a); logp(#name, p, fl); \
    return ((int (*)(int, const char*, int, ...))dlsym(RTLD_NEXT, #name))(d, p, fl, m); }
WRAP_OPENAT(openat) WRAP_OPENAT(openat64)
FILE* fopen(const char* p, const char* m) { logp("fopen", p, strchr(m, 'w') || strchr(m, 'a') || strchr(m, '+') ? O_WRONLY : 0);
  return ((FILE * (*)(const char*, const char*)) dlsym(RTLD_NEXT, "fopen"))(p, m); }
FILE* fopen64(const char* p, const char* m) { logp("fopen64", p, strchr(m, 'w') || strchr(m, 'a') || strchr(m, '+') ? O_WRONLY : 0);
  return ((FILE * (*)(const char*, const char*)) dlsym(RTLD_NEXT, "fopen64"))(p, m); }
int access(const char* p, int m) { logp("access", p, 0); return ((int (*)(const char*, int))dlsym(RTLD_NEXT, "access"))(p, m); }
int stat(const char* p, struct stat* s) { logp("stat", p, 0); return ((int (*)(const char*, struct stat*))dlsym(RTLD_NEXT, "stat"))(p, s); }
int lstat(const char* p, struct stat* s) { logp("lstat", p, 0); return ((int (*)(const char*, struct stat*))dlsym(RTLD_NEXT, "lstat"))(p, s); }
DIR* opendir(const char* p) { logp("opendir", p, 0); return ((DIR * (*)(const char*)) dlsym(RTLD_NEXT, "opendir"))(p); }
ssize_t readlink(const char* p, char* b, size_t n) { logp("readlink", p, 0); return ((ssize_t(*)(const char*, char*, size_t))dlsym(RTLD_NEXT, "readlink"))(p, b, n); }
