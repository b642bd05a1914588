/*
 * The faults, one per step at most, chosen up front by the seeded PRNG
 * (sim_main.c): a process dies (its session terminated, the process gone), it
 * freezes (skips its turns while time goes on), it loses its connection (its
 * open transaction lost; it reconnects on its next turn), the virtual clock
 * jumps (up to two leases), or a node's clock is skewed (up to half a lease
 * either way). A transaction kept open across steps is an action of its own
 * (chunk-open, sim_proc.c).
 */
#include <stdio.h>
#include <unistd.h>

#include "sim.h"

static void terminate(sim *s, sim_proc *p)
{
	char b[16];
	const char *v[1] = { b };

	snprintf(b, sizeof(b), "%d", p->pid);
	PQclear(sim_q(s, "SELECT pg_terminate_backend($1::int)", 1, v));
	/* Its statement in flight fails: wait for its thread to see it. */
	while (p->busy)
		usleep(500);
	for (int i = 0; i < 20000; i++) {
		if (sim_q_ll(s, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1::int", 1,
			     v) == 0)
			break;
		usleep(500);
	}
	p->waiting = 0;
}

void sim_fault(sim *s, const sim_decision *d, char *out, size_t size)
{
	sim_proc *p = &s->procs[d->target];

	out[0] = '\0';
	switch (d->fault) {
	case F_DIE:
		if (p->state == S_DEAD)
			return;
		terminate(s, p);
		PQfinish(p->conn);
		p->conn = NULL;
		p->state = S_DEAD;
		p->frozen_until = 0;
		snprintf(out, size, "p%d dies", d->target);
		break;
	case F_FREEZE:
		if (p->state == S_DEAD)
			return;
		p->frozen_until = s->step + d->param;
		snprintf(out, size, "p%d freezes for %d steps", d->target, d->param);
		break;
	case F_DISCONNECT:
		if (p->state == S_DEAD || p->disconnected)
			return;
		terminate(s, p);
		p->disconnected = 1;
		if (p->state == S_IN_CHUNK)
			p->state = S_RUNNING;
		snprintf(out, size, "p%d loses its connection", d->target);
		break;
	case F_CLOCK_JUMP:
		s->vnow += d->param;
		snprintf(out, size, "clock jumps %d s", d->param);
		break;
	case F_SKEW:
		p->skew = d->param - SIM_LEASE / 2;
		snprintf(out, size, "p%d's clock skewed %+.0f s", d->target, p->skew);
		break;
	default:
		return;
	}
	/* A session ended frees its locks: others waiting on them go on. */
	sim_settle(s);
}
