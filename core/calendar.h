/*
 * The proleptic Gregorian calendar (internal), shared by the cron search
 * (core/cron.c) and the time zone arithmetic (core/zone.c), so that both count
 * days the same way. Day numbers count from 1970-01-01 (day 0) and may be
 * negative; years may be zero or negative (astronomical numbering: year 0 is
 * 1 BC).
 */
#ifndef CB_CORE_CALENDAR_H
#define CB_CORE_CALENDAR_H

/* 1 if @p y is a leap year. */
int cb__is_leap(long long y);

/* The number of days of month @p m (1-12) of year @p y. */
int cb__days_in_month(long long y, int m);

/* The day number of @p y-@p m-@p d (a valid date: month 1-12, day in the month). */
long long cb__days_from_civil(long long y, int m, int d);

/* The date of day number @p days. */
void cb__civil_from_days(long long days, long long *y, int *m, int *d);

/* The weekday of day number @p days, 0 = Sunday. */
int cb__weekday(long long days);

#endif
