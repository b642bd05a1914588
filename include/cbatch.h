/**
 * @file cbatch.h
 * Umbrella header: everything a job author needs.
 */
#ifndef CBATCH_H
#define CBATCH_H

#include "cbatch/version.h"
#include "cbatch/error.h"
#include "cbatch/params.h"
#include "cbatch/pg.h"
#include "cbatch/item.h"
#include "cbatch/repository.h"
#include "cbatch/step.h"
#include "cbatch/job.h"
#include "cbatch/lock.h"
#include "cbatch/metrics.h"
#include "cbatch/readers.h"
#include "cbatch/writers.h"
#include "cbatch/cli.h"
#include "cbatch/partition.h"
#include "cbatch/schedule.h"
#include "cbatch/cron.h"
#include "cbatch/zone.h"

#endif
