/*
 * The running program's name, for the lines cbatch prints to stderr on its
 * own (outage notes, a partition's hint): they belong to the job author's
 * program, so they carry its name, as the CLI's messages do (internal).
 */
#ifndef CB_CORE_PROGRAM_H
#define CB_CORE_PROGRAM_H

/* The basename of argv[0], as the C library keeps it; never NULL. */
const char *cb__program_name(void);

#endif
