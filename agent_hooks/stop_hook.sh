#!/usr/bin/env bash
# Stop hook for coding-agent runners: runs the attngate gate when the agent wants to finish.
#   exit 0: let the agent stop (the gate passed, or a loop guard let it go; see README.md)
#   exit 2: refuse; stderr carries the short verdict and one `done` question
# stdin: the runner's JSON (Claude Code sends {"session_id", "stop_hook_active", ...}); may be empty.
# Environment: ATTNGATE_BUILD_DIR (default <repo>/build/gpu), ATTNGATE_BIN (default: the one built
# there), ATTNGATE_REFUSE_EXIT (default 2, for runners that expect another code),
# ATTNGATE_STOP_MAX_REFUSALS (default 10).
set -uo pipefail

repo=${CLAUDE_PROJECT_DIR:-}
[[ -n $repo ]] || repo=$(git rev-parse --show-toplevel 2>/dev/null) || repo=$(cd "$(dirname "$0")/.." && pwd)
build=${ATTNGATE_BUILD_DIR:-$repo/build/gpu}
refuse_exit=${ATTNGATE_REFUSE_EXIT:-2}
input=$(cat)

refuse() {
  echo "attngate stop hook: $1" >&2
  # On the runner's retry after a refusal, let the agent go rather than loop on a setup problem.
  [[ $input =~ \"stop_hook_active\"[[:space:]]*:[[:space:]]*true ]] && exit 0
  exit "$refuse_exit"
}

bin=${ATTNGATE_BIN:-$build/agent_hooks/attngate}
if [[ ! -x $bin ]]; then
  # The gate builds everything, attngate included; the first time, build just the tool.
  [[ -f $build/CMakeCache.txt ]] || refuse "no configured build at $build (run: cmake --preset gpu)"
  cmake --build "$build" --target attngate >&2 || refuse "cannot build attngate in $build"
fi
[[ -x $bin ]] || refuse "no attngate executable at $bin"

printf '%s' "$input" | "$bin" --repo "$repo" stop-hook --build-dir "$build"
rc=$?
if ((rc == 2)); then exit "$refuse_exit"; fi
exit "$rc"
