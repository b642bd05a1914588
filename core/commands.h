/*
 * The names of the CLI's built-in commands, in one place below both their
 * users (internal): the CLI's command table (cli/commands.c) is indexed by
 * these ids, and the registry (framework/registry.c) refuses an extra
 * command that would shadow one of them. The order is `--help`'s.
 */
#ifndef CB_CORE_COMMANDS_H
#define CB_CORE_COMMANDS_H

#define CB__BUILTIN_COMMANDS(X)                                                                    \
	X(schema)                                                                                  \
	X(jobs)                                                                                    \
	X(run)                                                                                     \
	X(check)                                                                                   \
	X(restart)                                                                                 \
	X(stop)                                                                                    \
	X(abandon)                                                                                 \
	X(executions)                                                                              \
	X(show)                                                                                    \
	X(locks)                                                                                   \
	X(unlock)                                                                                  \
	X(metrics)                                                                                 \
	X(worker)                                                                                  \
	X(schedule)                                                                                \
	X(scheduler)                                                                               \
	X(serve)                                                                                   \
	X(cleanup)                                                                                 \
	X(help)

#define CB__BUILTIN_ID(name) CB__CMD_##name,
enum cb__builtin_id {
	CB__BUILTIN_COMMANDS(CB__BUILTIN_ID) CB__NBUILTINS
};
#undef CB__BUILTIN_ID

/* The name of built-in command @p id (0 <= id < CB__NBUILTINS), or NULL. */
const char *cb__builtin_name(int id);

/* The id of the built-in command named @p name, or -1 (also for NULL). */
int cb__builtin_find(const char *name);

#endif
