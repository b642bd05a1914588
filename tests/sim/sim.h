/*
 * The coordination simulator (issue 27): N simulated processes, each a state
 * machine over the real repository calls, each on its own connection to a
 * real PostgreSQL, driven by a list of decisions that a seeded PRNG makes up
 * front. One run is a pure function of (seed, options), or of a trace file.
 *
 * Files, in reading order:
 *   sim.h            this: the shared types
 *   sim_main.c       options, the decisions, one run, replay, the shrinker
 *   sim_proc.c       the processes: one thread each, actions over the real
 *                    repository functions, settling (done or blocked on a lock)
 *   sim_faults.c     the faults: die, freeze, lose connection, clock, skew
 *   sim_invariants.c the invariants, as SQL over the repository and the data
 *
 * Time: the simulator owns one virtual clock. Before each action a process
 * sets cbatch.virtual_now on its session to virtual time + its node's skew;
 * the database's batch_now(), the repository's one clock, answers with it.
 */
#ifndef CB_SIM_H
#define CB_SIM_H

#include <pthread.h>
#include <stdint.h>
#include <libpq-fe.h>

#define SIM_MAX_PROCS        8
#define SIM_LOCK             "sim:acc"
#define SIM_JOB              "acc"
#define SIM_LEASE            10.0 /* seconds of virtual time */
#define SIM_ITEMS            9    /* items per run (per job instance) */
#define SIM_RUNS             12   /* job instances, run 1.. */
#define SIM_CHUNK            3    /* items per chunk */
#define SIM_PARTS            3    /* partitions of a partitioned run (two runs in three) */
#define SIM_PARTITIONED(run) ((run) % 3 != 1)
/* of those, one in two has its workers drain one queue (FOR UPDATE SKIP LOCKED) */
#define SIM_QUEUE(run) ((run) % 3 == 0)
#define SIM_FIRED_JOB  "sim_fired" /* the schedule's job: its firings' children run it */
#define SIM_FIRED_LOCK "sim:fired"
#define SIM_SCHEDULE   "sim"        /* every 10 s, overlap SKIP */
#define SIM_EPOCH_UNIX 1893456000LL /* 2030-01-01 00:00:00 UTC, virtual time 0 */
#define SIM_MSG        512
/* A run (of sim_item i) ended: an execution of its instance completed or was abandoned. */
#define SIM_RUN_ENDED                                                                              \
	"SELECT 1 FROM batch_job_instance ji JOIN batch_job_execution e USING (job_instance_id) "  \
	"WHERE ji.job_name = '" SIM_JOB "' AND ji.job_key = lpad(i.run::text, 32, '0') "           \
	"AND e.status IN ('COMPLETED', 'ABANDONED')"
#define CB_SIM_STR_(x) #x
#define CB_SIM_STR(x)  CB_SIM_STR_(x)

/* The deliberate protocol breakages of --bug (the self-test). */
enum sim_bug {
	BUG_NONE,
	BUG_NOFENCE,     /* the chunk's checkpoint skips the fence (p_lock_name NULL) */
	BUG_IGNORE_LOST, /* a lost heartbeat is ignored and the chunk written unfenced */
	BUG_NOCAS,       /* a claimed instant is launched without the compare-and-set */
};

/* One step's decisions, made before the run (a pure function of the seed). */
typedef struct sim_decision {
	int quiet;       /* of the quiet phase: no fault, no operator, no open chunk */
	int advance;     /* seconds of virtual time before it (1; the shrinker adds
			 the time of the steps it removes) */
	int fault;       /* enum sim_fault */
	int target;      /* the fault's process */
	int param;       /* the fault's size (steps, seconds) */
	int actor;       /* the process that acts (a slot; SIM_OPERATOR for the operator) */
	uint32_t choice; /* which of its possible actions (modulo their number) */
} sim_decision;

enum sim_fault {
	F_NONE,
	F_DIE,
	F_FREEZE,
	F_DISCONNECT,
	F_CLOCK_JUMP,
	F_SKEW,
	F_NFAULTS
};

enum sim_state {
	S_DEAD,     /* no process in this slot (never born, or died) */
	S_IDLE,     /* no lock */
	S_LOCKED,   /* holds the lock, no execution yet */
	S_RUNNING,  /* runs an execution under the lock, or (part >= 0) a claimed partition */
	S_MANAGING, /* runs a partitioned execution under the lock: polls its partitions */
	S_IN_CHUNK, /* its chunk transaction is open (checkpointed, not committed) */
	S_FIRING    /* a scheduler node: the child of the firing it launched runs */
};

typedef struct sim_proc {
	int index, gen;
	enum sim_state state;
	char owner[64];
	PGconn *conn;
	int pid;          /* its backend */
	int disconnected; /* lost its connection: reconnects on its next turn */
	int frozen_until; /* skips its turns until this step */
	double skew;      /* its node's clock skew, seconds */
	long long token, exec_id, step_id, version, run;
	int part;            /* the partition it works on as a worker, -1 none */
	char lock[64];       /* the lock its chunks are fenced by (the job's, or the partition's) */
	long long ltoken;    /* and that lock's token */
	char wstep[64];      /* a worker's partition step name */
	long long firing_id; /* S_FIRING: its firing */
	double last_beat;    /* virtual time of its last heartbeat */
	long long chunk_sum; /* the open chunk's items' sum, added on commit */
	int chunk_items;
	/* the thread that runs its actions */
	pthread_t thread;
	int has_thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int action;  /* posted action, -1 none */
	int posted;  /* the last action posted */
	int busy;    /* an action runs (or waits) */
	int waiting; /* busy and blocked on a lock (as last settled) */
	int quit;
	char result[SIM_MSG];
} sim_proc;

#define SIM_OPERATOR SIM_MAX_PROCS /* the operator's slot */

typedef struct sim {
	uint64_t seed;
	int nprocs;
	enum sim_bug bug;
	int verbose;
	char conninfo[1024];
	PGconn *admin; /* the simulator's own: invariants and faults */
	double vnow;   /* virtual time, seconds since the run's epoch */
	int step;
	int quiet_now;                     /* the step is of the quiet phase */
	long long committed[SIM_RUNS + 1]; /* what the simulator saw commit, per run */
	long long max_token;
	long long launched_firing;         /* a firing launched in this step, checked for overlap */
	sim_proc procs[SIM_MAX_PROCS + 1]; /* + the operator */
	char violation[SIM_MSG];           /* the first invariant that failed */
	char invariant[64];                /* its name */
	char **trace;                      /* one line per step */
	int ntrace;
	/* the epoch of virtual time, as text (fixed: runs are reproducible) */
	const char *epoch;
} sim;

/* sim_proc.c */
int sim_proc_start(sim *s, sim_proc *p);
void sim_proc_stop(sim *s, sim_proc *p);
/* Run one action of @p p (its turn): post it, then settle. Writes what
 * happened into @p out. */
void sim_proc_turn(sim *s, sim_proc *p, uint32_t choice, char *out, size_t size);
/* Wait until every busy process is done or blocked on a lock. */
void sim_settle(sim *s);
int sim_proc_can_act(const sim *s, const sim_proc *p);
const char *sim_proc_result(const sim_proc *p);
/* The heartbeat threads' beats that are due, after a step's action. */
void sim_background(sim *s, char *out, size_t size);
void sim_proc_time(const sim *s, const sim_proc *p, char *out, size_t size);

/* sim_faults.c */
void sim_fault(sim *s, const sim_decision *d, char *out, size_t size);

/* sim_invariants.c: 0 when all hold, else -1 with s->invariant/violation set. */
int sim_check(sim *s);
/* Liveness, after the quiet phase: every execution ended, every run done or abandoned. */
int sim_check_live(sim *s, int final);

/* sim_main.c */
PGresult *sim_q(sim *s, const char *sql, int n, const char *const *p);
long long sim_q_ll(sim *s, const char *sql, int n, const char *const *p);

#endif
