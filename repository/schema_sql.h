/* The schema compiled from sql/ (generated schema_sql.c). Internal. */
#ifndef CB_SCHEMA_SQL_H
#define CB_SCHEMA_SQL_H
#include <stddef.h>

/* A versioned migration, sql/migrations/NNN_*.sql: tables, indexes, data moves. */
struct cb__migration {
	int version;              /* from the file name's leading number */
	const char *name;         /* the file name */
	const char *sql;          /* the whole file */
	const char *const *needs; /* functions it calls while it runs, NULL-terminated */
};

/* A function, sql/functions/<name>.sql: applied again whenever its hash changes. */
struct cb__schema_function {
	const char *name; /* the function's name, which is the file's */
	const char *hash; /* SHA-256 of the file, hex */
	const char *sql;  /* the whole file: CREATE OR REPLACE FUNCTION (and its trigger) */
};

extern const struct cb__migration cb__migrations[];
extern const size_t cb__migrations_count;
extern const struct cb__schema_function cb__schema_functions[];
extern const size_t cb__schema_functions_count;
#endif
