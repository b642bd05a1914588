/* The migrations compiled from sql/ (generated schema_sql.c). Internal. */
#ifndef CB_SCHEMA_SQL_H
#define CB_SCHEMA_SQL_H
#include <stddef.h>

struct cb__migration {
	int version;      /* from the file name's leading number */
	const char *name; /* the file name */
	const char *sql;  /* the whole file */
};

extern const struct cb__migration cb__migrations[];
extern const size_t cb__migrations_count;
#endif
