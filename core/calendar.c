/*
 * The proleptic Gregorian calendar (core/calendar.h). Days are counted in
 * 400-year eras that start on a 1st of March, so that the leap day ends its
 * year and months have a fixed shape: March to February is 31 30 31 30 31 31
 * 30 31 30 31 31 28/29, and the day of the year of a month's first day is a
 * linear function of the month, (153 * mp + 2) / 5 with mp = 0 for March.
 */
#include "calendar.h"

/* An era is 400 years of 146097 days (a whole number of weeks). 0000-03-01 is
 * day -719468 from 1970-01-01. */
#define ERA_DAYS    146097
#define EPOCH_SHIFT 719468

/* Floor division: the era of a year before year 0 is negative. */
static long long floor_div(long long a, long long b)
{
	long long q = a / b;

	return a % b != 0 && (a < 0) != (b < 0) ? q - 1 : q;
}

int cb__is_leap(long long y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

int cb__days_in_month(long long y, int m)
{
	static const int len[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };

	return m == 2 && cb__is_leap(y) ? 29 : len[m - 1];
}

long long cb__days_from_civil(long long y, int m, int d)
{
	long long yy = m <= 2 ? y - 1 : y; /* January and February end the previous March year */
	long long era = floor_div(yy, 400);
	long long yoe = yy - era * 400;                                  /* 0-399 */
	long long doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1; /* 0-365, from March 1st */
	long long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;           /* 0-146096 */

	return era * ERA_DAYS + doe - EPOCH_SHIFT;
}

void cb__civil_from_days(long long days, long long *y, int *m, int *d)
{
	long long z = days + EPOCH_SHIFT;
	long long era = floor_div(z, ERA_DAYS);
	long long doe = z - era * ERA_DAYS; /* 0-146096 */
	/* Years of the era: 365 days each, less the leap days not yet counted
	 * (every 4th year, not every 100th, every 400th: the era's last day). */
	long long yoe = (doe - doe / 1460 + doe / 36524 - doe / (ERA_DAYS - 1)) / 365;
	long long doy = doe - (365 * yoe + yoe / 4 - yoe / 100); /* 0-365 */
	int mp = (int)((5 * doy + 2) / 153);                     /* 0 = March */

	*d = (int)(doy - (153 * mp + 2) / 5 + 1);
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = era * 400 + yoe + (*m <= 2);
}

int cb__weekday(long long days)
{
	/* 1970-01-01 was a Thursday. */
	long long w = (days + 4) % 7;

	return (int)(w < 0 ? w + 7 : w);
}
