/*
 * `serve`: the HTTP daemon (libmicrohttpd, its own thread pool), its limits,
 * the request lifecycle and a graceful stop on SIGTERM/SIGINT.
 *
 * Limits: at most CONNECTIONS_MAX connections, at most --client-connections
 * (CB__SERVE_DEFAULT_PER_CLIENT) of them from one client address (so that
 * one client cannot take them all and the probes stay answerable), each
 * closed after IDLE_TIMEOUT seconds without traffic or HEAD_DEADLINE seconds
 * after it opened (or its last request ended) without a whole request head;
 * request headers within MHD's per-connection memory; request bodies up to
 * CB__CONSOLE_BODY_MAX (else 413, at once when Content-Length says so). A
 * request whose Host is not one of the server's names is 421 (hosts.c).
 * The signals are blocked in every thread and taken by sigtimedwait() (which
 * also wakes every second to close slow heads) in the one that called
 * cb__serve_run: on one, the listening socket closes, the requests in
 * flight finish (each reply then says Connection: close), and it returns.
 */
#include "console.h"
#include "log.h"
#include "clock.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cbatch/version.h"

#define CONNECTIONS_MAX 1000
#define IDLE_TIMEOUT    30  /* seconds a connection may stay silent */
#define HEAD_DEADLINE   10  /* seconds to send a whole request head */
#define POOL_WAIT       5.0 /* seconds a request waits for a connection, then 503 */
#define DRAIN_SECONDS   30  /* longest wait for the requests in flight on a stop */
#define TOKEN_MAX       4096

int cb__serve_parse_listen(int *family, char *addr, size_t addr_size, int *port, const char *value,
			   cb_error *err)
{
	const char *colon, *host = value;
	size_t hlen;
	char buf[64], *end;
	unsigned char bin[sizeof(struct in6_addr)];
	long p;

	if (!value || !*value)
		return cb_error_set(err, CB_EINVAL, "invalid --listen '': expected ADDR:PORT");
	colon = strrchr(value, ':');
	if (!colon || colon == value)
		goto bad;
	if (value[0] == '[') {
		/* [IPv6]:PORT */
		if (colon[-1] != ']')
			goto bad;
		host = value + 1;
		hlen = (size_t)(colon - 1 - host);
	} else
		hlen = (size_t)(colon - value);
	if (hlen == 0 || hlen >= sizeof(buf) || hlen >= addr_size)
		goto bad;
	memcpy(buf, host, hlen);
	buf[hlen] = '\0';
	errno = 0;
	p = strtol(colon + 1, &end, 10);
	if (!isdigit((unsigned char)colon[1]) || *end || errno || p > 65535)
		goto bad;
	*port = (int)p;
	/* Literals and "localhost" only: a name to resolve could bind anywhere. */
	if (strcmp(buf, "localhost") == 0 && value[0] != '[') {
		*family = 4;
		snprintf(addr, addr_size, "127.0.0.1");
		return 0;
	}
	if (value[0] != '[' && inet_pton(AF_INET, buf, bin) == 1) {
		*family = 4;
		snprintf(addr, addr_size, "%s", buf);
		return 0;
	}
	if (value[0] == '[' && inet_pton(AF_INET6, buf, bin) == 1) {
		*family = 6;
		snprintf(addr, addr_size, "%s", buf);
		return 0;
	}
bad:
	return cb_error_set(err, CB_EINVAL,
			    "invalid --listen '%.200s': expected ADDR:PORT with an IPv4 address, "
			    "[IPv6 address] or localhost, and a port 0..65535",
			    value);
}

/*
 * Read the admin token: the file's first line. Whoever can write the file
 * chooses the token, whoever can read it has it: only the server's own user
 * may do either. The checks are on the file opened (fstat of the descriptor,
 * never a second lookup of the path), and a symbolic link is not followed:
 * its target could be swapped between a check and the read.
 */
static int read_token(char **out, const char *path, cb_error *err)
{
	char buf[TOKEN_MAX + 2];
	struct stat st;
	ssize_t n;
	size_t len;
	int fd;

	*out = NULL;
	/* O_NONBLOCK: a FIFO planted at the path must not hang the start. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0 && errno == ELOOP)
		return cb_error_set(err, CB_EINVAL,
				    "admin token file '%.200s' is a symbolic link: name the file "
				    "itself",
				    path);
	if (fd < 0)
		return cb_error_set(err, CB_EINVAL, "cannot open admin token file '%.200s': %s",
				    path, strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return cb_error_set(err, CB_EINVAL, "admin token file '%.200s' is not a file",
				    path);
	}
	if (st.st_uid != geteuid()) {
		close(fd);
		return cb_error_set(err, CB_EINVAL,
				    "admin token file '%.200s' is owned by uid %u, not by this "
				    "server's user (uid %u): its owner could choose the token",
				    path, (unsigned)st.st_uid, (unsigned)geteuid());
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		close(fd);
		return cb_error_set(err, CB_EINVAL,
				    "admin token file '%.200s' is writable by group or others "
				    "(mode %04o): they could choose the token; make it private, "
				    "e.g. chmod 600 '%.200s'",
				    path, (unsigned)(st.st_mode & 07777), path);
	}
	if (st.st_mode & (S_IRGRP | S_IROTH)) {
		close(fd);
		return cb_error_set(err, CB_EINVAL,
				    "admin token file '%.200s' is readable by group or others "
				    "(mode %04o): make it private, e.g. chmod 600 '%.200s'",
				    path, (unsigned)(st.st_mode & 07777), path);
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return cb_error_set(err, CB_EINVAL, "cannot read admin token file '%.200s': %s",
				    path, strerror(errno));
	buf[n] = '\0';
	len = strcspn(buf, "\r\n");
	buf[len] = '\0';
	while (len > 0 && (buf[len - 1] == ' ' || buf[len - 1] == '\t'))
		buf[--len] = '\0';
	if (len == 0 || len > TOKEN_MAX)
		return cb_error_set(err, CB_EINVAL,
				    "admin token file '%.200s': the token (its first line) must "
				    "be 1..%d bytes",
				    path, TOKEN_MAX);
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)buf[i] < 0x21 || (unsigned char)buf[i] > 0x7e)
			return cb_error_set(err, CB_EINVAL,
					    "admin token file '%.200s': the token must be "
					    "printable ASCII without spaces",
					    path);
	if (!(*out = strdup(buf)))
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	return 0;
}

int cb__request_is_admin(cb__request *r)
{
	const char *got = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
						      MHD_HTTP_HEADER_AUTHORIZATION);
	const char *want = r->console->token;
	size_t n, i;
	unsigned char diff = 0;

	if (!want || !got || strncasecmp(got, "Bearer ", 7) != 0)
		return 0;
	got += 7;
	while (*got == ' ')
		got++;
	n = strlen(want);
	if (strlen(got) != n)
		return 0;
	/* Constant time in the token's content: no byte-by-byte guessing. */
	for (i = 0; i < n; i++)
		diff |= (unsigned char)(got[i] ^ want[i]);
	return diff == 0;
}

/*
 * A connection, tracked from its start to its close, so that the main thread
 * can close those that take too long to send a request head (MHD's own
 * timeout restarts at every byte: a client sending one byte now and then
 * would hold its connections forever).
 */
struct cb__slot {
	struct cb__slot *prev, *next;
	int fd;
	int waiting; /* for a request head (since @c since) */
	int shut;
	double since;
};

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	cb__console *c = cls;
	struct cb__slot *s = *socket_context;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *fd =
			MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);

		if (!fd || !(s = calloc(1, sizeof(*s))))
			return; /* untracked: MHD's idle timeout still applies */
		s->fd = fd->connect_fd;
		s->waiting = 1;
		s->since = cb__clock_mono();
		pthread_mutex_lock(&c->lock);
		s->next = c->slots;
		if (c->slots)
			c->slots->prev = s;
		c->slots = s;
		pthread_mutex_unlock(&c->lock);
		*socket_context = s;
		return;
	}
	if (!s)
		return;
	/* Before MHD closes the descriptor: the reaper never touches a reused one. */
	pthread_mutex_lock(&c->lock);
	if (s->prev)
		s->prev->next = s->next;
	else
		c->slots = s->next;
	if (s->next)
		s->next->prev = s->prev;
	pthread_mutex_unlock(&c->lock);
	free(s);
	*socket_context = NULL;
}

/* Mark @p conn's slot as having a request (0), or waiting for the next (1). */
static void slot_waiting(cb__console *c, struct MHD_Connection *conn, int waiting)
{
	const union MHD_ConnectionInfo *i =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct cb__slot *s = i ? i->socket_context : NULL;

	if (!s)
		return;
	pthread_mutex_lock(&c->lock);
	s->waiting = waiting;
	s->since = cb__clock_mono();
	pthread_mutex_unlock(&c->lock);
}

/* Close the connections past their head deadline: a shutdown makes MHD see
 * the end of the stream and close them on its own threads. */
static void reap(cb__console *c)
{
	double now = cb__clock_mono();

	pthread_mutex_lock(&c->lock);
	for (struct cb__slot *s = c->slots; s; s = s->next)
		if (s->waiting && !s->shut && now - s->since > HEAD_DEADLINE) {
			shutdown(s->fd, SHUT_RDWR);
			s->shut = 1;
		}
	pthread_mutex_unlock(&c->lock);
}

static void count(cb__console *c, long d)
{
	pthread_mutex_lock(&c->lock);
	c->in_flight += d;
	pthread_mutex_unlock(&c->lock);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **req_cls)
{
	cb__console *c = cls;
	cb__request *r = *req_cls;

	(void)version;
	if (!r) {
		const char *cl, *host;

		if (!(r = calloc(1, sizeof(*r))))
			return MHD_NO;
		r->console = c;
		r->conn = conn;
		r->method = method;
		r->url = url;
		r->api = 1;
		*req_cls = r;
		count(c, 1);
		r->counted = 1;
		slot_waiting(c, conn, 0);
		/* DNS rebinding: a page of another site whose name now resolves to
		 * us sends that name. Nothing is read or done for it. */
		host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
		if (!host || !cb__host_allowed(c, host, strlen(host))) {
			cb__reply_error(r, MHD_HTTP_MISDIRECTED_REQUEST,
					"misdirected request: Host '%.100s' is not a name of this "
					"server (serve --allowed-host NAME adds one)",
					host ? host : "");
			return r->result;
		}
		/* Refuse a body announced too large before it is sent: the client,
		 * if it waits for "100 Continue", never sends it. */
		cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						 MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl && strtoull(cl, NULL, 10) > CB__CONSOLE_BODY_MAX) {
			cb__reply_error(r, MHD_HTTP_CONTENT_TOO_LARGE,
					"request body too large (at most %d bytes)",
					CB__CONSOLE_BODY_MAX);
			return r->result;
		}
		return MHD_YES;
	}
	if (*upload_data_size) {
		size_t n = *upload_data_size;

		*upload_data_size = 0;
		if (r->replied || r->too_large)
			return MHD_YES;
		if (r->body_len + n > CB__CONSOLE_BODY_MAX) {
			/* Chunked, or a lying Content-Length: drop it, answer at the end. */
			r->too_large = 1;
			free(r->body);
			r->body = NULL;
			return MHD_YES;
		}
		{
			char *b = realloc(r->body, r->body_len + n + 1);

			if (!b)
				return MHD_NO;
			memcpy(b + r->body_len, upload_data, n);
			r->body_len += n;
			b[r->body_len] = '\0';
			r->body = b;
		}
		return MHD_YES;
	}
	if (r->replied)
		return MHD_YES;
	if (r->too_large)
		cb__reply_error(r, MHD_HTTP_CONTENT_TOO_LARGE,
				"request body too large (at most %d bytes)", CB__CONSOLE_BODY_MAX);
	else
		cb__route_request(r);
	if (!r->replied)
		cb__reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "no reply");
	return r->result;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
			 enum MHD_RequestTerminationCode toe)
{
	cb__request *r = *req_cls;

	(void)toe;
	slot_waiting(cls, conn, 1);
	if (!r)
		return;
	if (r->counted)
		count(cls, -1);
	free(r->body);
	free(r->id_buf);
	free(r);
	*req_cls = NULL;
}

/* MHD's own messages (a failed bind, a broken client) go to the log. */
static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	FILE *f = cls;
	char msg[1024];
	size_t n;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
		msg[--n] = '\0';
	cb__log_to(f, "serve", CB__LOG_WARN, CB__EV_SERVE_NOTE, NULL, "%s", msg);
}

/* The program's jobs as a JSON array text, or NULL. */
static char *names_json(const cb__serve_options *o)
{
	json_t *a;
	char *s;

	if (!o->njobs)
		return NULL;
	a = json_array();
	for (size_t i = 0; a && i < o->njobs; i++)
		json_array_append_new(a, cb__json_text(o->job_names[i]));
	s = a ? json_dumps(a, JSON_COMPACT) : NULL;
	json_decref(a);
	return s;
}

static long in_flight(cb__console *c)
{
	long n;

	pthread_mutex_lock(&c->lock);
	n = c->in_flight;
	pthread_mutex_unlock(&c->lock);
	return n;
}

/*
 * One run of `serve`, phase by phase: check the options (configure), set up
 * the console's state (open_console), block the stop signals, start the
 * daemon and say where it listens (start), serve until a signal
 * (wait_for_stop), let what is in flight finish (drain), free it all
 * (release). Each phase leaves in this struct what the next one needs.
 */
struct run {
	const cb__serve_options *o;
	FILE *log;
	cb__console c;
	int family; /* 4 or 6 */
	char addr[64];
	int port; /* as asked (0: any), then as bound */
	int pool, per_client;
	struct sockaddr_storage ss;
	sigset_t sigs, old; /* the stop signals, and the mask before they were blocked */
	int sig;            /* the one that stopped the server */
};

/* The options checked, the admin token read, the allowed hosts and the
 * listening address made. */
static int configure(struct run *s, cb_error *err)
{
	const cb__serve_options *o = s->o;
	int rc;

	if ((rc = cb__serve_parse_listen(&s->family, s->addr, sizeof(s->addr), &s->port,
					 o->listen ? o->listen : CB__SERVE_DEFAULT_LISTEN, err)) <
	    0)
		return rc;
	if (s->pool < 1 || s->pool > CB__SERVE_MAX_POOL)
		return cb_error_set(err, CB_EINVAL, "invalid --pool %d: expected 1..%d", s->pool,
				    CB__SERVE_MAX_POOL);
	if (s->per_client < 1 || s->per_client > CB__SERVE_MAX_PER_CLIENT)
		return cb_error_set(err, CB_EINVAL,
				    "invalid --client-connections %d: expected 1..%d",
				    s->per_client, CB__SERVE_MAX_PER_CLIENT);
	if (o->token_file && (rc = read_token(&s->c.token, o->token_file, err)) < 0)
		return rc;
	atomic_init(&s->c.port, s->port);
	if ((rc = cb__hosts_build(&s->c, s->family, s->addr, o->allowed_hosts, o->nallowed_hosts,
				  err)) < 0)
		return rc;
	if (s->family == 4) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&s->ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)s->port);
		inet_pton(AF_INET, s->addr, &sin->sin_addr);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&s->ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)s->port);
		inet_pton(AF_INET6, s->addr, &sin6->sin6_addr);
	}
	return 0;
}

/* What the requests read: the program's jobs, the log, the pool. */
static int open_console(struct run *s, cb_error *err)
{
	const cb__serve_options *o = s->o;
	int rc;

	s->c.job_names = names_json(o);
	s->c.jobs = o->job_names;
	s->c.njobs = o->njobs;
	s->c.reg = o->reg;
	s->c.conninfo = o->conninfo;
	s->c.log = s->log;
	s->c.launch_wait = o->launch_wait > 0 ? o->launch_wait : CB__SERVE_DEFAULT_LAUNCH_WAIT;
	if ((rc = cb__pool_new(&s->c.pool, o->conninfo, s->pool, POOL_WAIT, s->c.token != NULL,
			       err)) < 0 ||
	    (rc = cb__snapshot_new(&s->c.metrics, o->snapshot_interval, s->c.pool,
				   cb__metrics_compute, NULL, err)) < 0 ||
	    (rc = cb__snapshot_new(&s->c.overview, o->snapshot_interval, s->c.pool,
				   cb__jobs_compute, &s->c, err)) < 0)
		return rc;
	/* Connecting to a database that does not answer must not hold a request
	 * (and its pool slot) for long; a connect_timeout in the conninfo wins. */
	setenv("PGCONNECT_TIMEOUT", "5", 0);
	return 0;
}

/* Before any thread exists: they all inherit the mask, so the signals
 * reach only sigtimedwait() in wait_for_stop. A client gone mid-reply is no
 * signal. */
static void block_signals(struct run *s)
{
	struct sigaction ign;

	sigemptyset(&s->sigs);
	sigaddset(&s->sigs, SIGTERM);
	sigaddset(&s->sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &s->sigs, &s->old);
	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &ign, NULL);
}

/* The daemon started, its port known and announced. */
static int start(struct run *s, cb_error *err)
{
	const union MHD_DaemonInfo *info;
	unsigned threads, flags;

	/* Requests that wait on the repository hold a thread: more threads than
	 * connections, so that /healthz answers while the pool is busy. */
	threads = (unsigned)(s->pool * 2 < 4 ? 4 : s->pool * 2);
	/* poll(), not epoll: libmicrohttpd 0.9.75 takes the listening socket
	 * out of each pool thread's epoll set both in MHD_quiesce_daemon and in
	 * the thread itself, unguarded, and aborts the process when the thread
	 * loses (seen under connection churn at a stop, 1 stop in ~300). With
	 * poll() a quiesce only wakes the threads, which then leave the socket
	 * out. The thread pool keeps each poll set small. */
	flags = MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG;
	if (s->family == 6)
		flags |= MHD_USE_IPv6;
	s->c.daemon = MHD_start_daemon(
		flags, (uint16_t)s->port, NULL, NULL, on_request, &s->c, MHD_OPTION_EXTERNAL_LOGGER,
		on_mhd_log, s->log, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&s->ss,
		MHD_OPTION_THREAD_POOL_SIZE, threads, MHD_OPTION_CONNECTION_LIMIT,
		(unsigned)CONNECTIONS_MAX, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
		(unsigned)s->per_client, MHD_OPTION_NOTIFY_CONNECTION, on_connection, &s->c,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)IDLE_TIMEOUT,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024),
		MHD_OPTION_NOTIFY_COMPLETED, on_completed, &s->c, MHD_OPTION_END);
	if (!s->c.daemon)
		return cb_error_set(err, CB_ERROR,
				    "cannot listen on %s%s%s:%d (in use, or not an "
				    "address of this host?)",
				    s->family == 6 ? "[" : "", s->addr, s->family == 6 ? "]" : "",
				    s->port);
	info = MHD_get_daemon_info(s->c.daemon, MHD_DAEMON_INFO_BIND_PORT);
	if (info && info->port)
		s->port = info->port;
	/* Before the port is announced: no client can know it earlier. */
	atomic_store(&s->c.port, s->port);
	cb__log_to(s->log, "serve", CB__LOG_INFO, CB__EV_SERVE_LISTENING, NULL,
		   "listening on http://%s%s%s:%d (%s, %d repository connection%s)",
		   s->family == 6 ? "[" : "", s->addr, s->family == 6 ? "]" : "", s->port,
		   s->c.token ? "admin actions enabled" : "read-only", s->pool,
		   s->pool == 1 ? "" : "s");
	return 0;
}

/* Serve until SIGTERM or SIGINT, closing slow request heads every second. */
static void wait_for_stop(struct run *s)
{
	for (;;) {
		s->sig = cb__clock_sigwait(&s->sigs, 1.0);
		if (s->sig > 0)
			break;
		reap(&s->c);
	}
}

/* Stop accepting, then let what is in flight finish and be sent (at most
 * DRAIN_SECONDS), and stop the daemon. */
static void drain(struct run *s)
{
	MHD_socket ls;
	double t0;

	s->c.stopping = 1;
	/* Ours after the quiesce, but a pool thread may still be polling it
	 * until it wakes: it is shut down now (new connections are refused, not
	 * queued) and closed only once the threads are gone, so that its number
	 * cannot be reused under a thread that still holds it. */
	ls = MHD_quiesce_daemon(s->c.daemon);
	if (ls != MHD_INVALID_SOCKET)
		shutdown(ls, SHUT_RDWR);
	t0 = cb__clock_mono();
	for (;;) {
		long n = in_flight(&s->c);
		double now = cb__clock_mono();

		if (n == 0)
			break;
		if (now - t0 > DRAIN_SECONDS) {
			cb__log_to(s->log, "serve", CB__LOG_WARN, CB__EV_SERVE_STOPPING, NULL,
				   "%ld request%s still in flight after %d s: closing", n,
				   n == 1 ? "" : "s", DRAIN_SECONDS);
			break;
		}
		cb__clock_sleep(0.01);
	}
	MHD_stop_daemon(s->c.daemon);
	s->c.daemon = NULL;
	if (ls != MHD_INVALID_SOCKET)
		close(ls);
}

/* Whatever the phases made (after any of them). */
static void release(struct run *s)
{
	cb__snapshot_free(s->c.metrics);
	cb__snapshot_free(s->c.overview);
	cb__pool_free(s->c.pool);
	pthread_mutex_destroy(&s->c.lock);
	free(s->c.token);
	free(s->c.job_names);
	free(s->c.hosts);
}

int cb__serve_run(const cb__serve_options *o, cb_error *err)
{
	struct run s;
	int rc;

	memset(&s, 0, sizeof(s));
	s.o = o;
	s.log = o->log ? o->log : stderr;
	s.pool = o->pool ? o->pool : CB__SERVE_DEFAULT_POOL;
	s.per_client = o->per_client ? o->per_client : CB__SERVE_DEFAULT_PER_CLIENT;
	pthread_mutex_init(&s.c.lock, NULL);
	if ((rc = configure(&s, err)) < 0 || (rc = open_console(&s, err)) < 0)
		goto done;
	block_signals(&s);
	if ((rc = start(&s, err)) < 0) {
		pthread_sigmask(SIG_SETMASK, &s.old, NULL);
		goto done;
	}
	wait_for_stop(&s);
	drain(&s);
	pthread_sigmask(SIG_SETMASK, &s.old, NULL);
	cb__log_to(s.log, "serve", CB__LOG_INFO, CB__EV_SERVE_STOPPED, NULL, "stopped on %s",
		   s.sig == SIGINT ? "SIGINT" : "SIGTERM");
done:
	release(&s);
	return rc;
}
