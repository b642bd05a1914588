/*
 * A scheduler node's runners (internal): long-lived processes, forked from
 * the node without exec, that run its firings one after another in-process
 * (`PROG run JOB PARAMS...` through the program's own command line, as the
 * exec'd child would) and keep their repository connections warm between
 * them (pg/keep.c). A firing costs the server a fresh backend or two with
 * cold caches when it is a new process; in a runner it costs its statements.
 *
 * The node and a runner talk over a SOCK_SEQPACKET socket pair: the node
 * sends one firing's argv with the write ends of the firing's stdout and
 * stderr pipes (SCM_RIGHTS), the runner answers with the command's exit code
 * once it has flushed and closed both, so the node reads the firing's output
 * to its end as it reads an exec'd child's. A runner that dies (a crash, a
 * kill) ends its firing as a child's death would; the node starts another.
 */
#ifndef CB_FRAMEWORK_RUNNER_H
#define CB_FRAMEWORK_RUNNER_H

#include <stddef.h>
#include <sys/types.h>

/* Runs one firing's command line in the runner: an exit code (0-255). */
typedef int (*cb__runner_fn)(void *ctx, int argc, char **argv);

/* Fork a runner that runs @p fn's firings with CBATCH_DB set to @p conninfo
 * (unless NULL). @p close_fds (@p nclose of them, -1 skipped) are closed in
 * it: the node's own descriptors (its repository connection, other runners'
 * sockets). @return 0 with *pid and *sock (the node's end, close-on-exec,
 * non-blocking), or -1 with errno. */
int cb__runner_start(pid_t *pid, int *sock, const char *conninfo, cb__runner_fn fn, void *ctx,
		     const int *close_fds, size_t nclose);

/* Hand firing @p argv (NULL-terminated) to the runner at @p sock with its
 * output pipes' write ends (which the caller still closes). @return 0, or -1
 * with errno (EMSGSIZE: too long a command line; EPIPE: the runner is gone). */
int cb__runner_send(int sock, char *const *argv, int out_fd, int err_fd);

/* The exit code of the runner's firing, if it has answered: @return 1 with
 * *code and *execution (the execution it created, 0: none), 0 not yet, -1
 * the runner closed its end (it is gone). */
int cb__runner_result(int sock, int *code, long long *execution);

#endif
