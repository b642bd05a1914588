/* A second connection with the parameters of an existing one (internal). */
#ifndef CB_FRAMEWORK_CONN_H
#define CB_FRAMEWORK_CONN_H

#include <libpq-fe.h>

/* New connection (PQfinish it) with @p like's parameters and @p application_name. */
PGconn *cb__connect_like(PGconn *like, const char *application_name);

#endif
