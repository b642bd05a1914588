cmake_minimum_required(VERSION 3.21)
# One clock (issue 27): the library's SQL reads the time only through
# batch_now() (sql/functions/batch_now.sql), so that a session that sets
# cbatch.virtual_now sees that instant in every judgment. This check reads
# the library's sources (the layers, the public headers, the SQL and the
# build's generators; not tests/, examples/ or bench/) and fails on any
# direct read of PostgreSQL's clock: now(), 'now', clock_timestamp,
# current_timestamp, current_date, current_time, localtimestamp,
# statement_timestamp, transaction_timestamp, timeofday. Comments count too:
# a comment that names one is rewritten to say batch_now(), so that a grep
# for the clock finds only the one place. (LOCALTIME is left out: the zone
# of that name, repository/zone.c, and C's localtime_r would match.) The
# integration test one_clock checks the same in a repository's catalog.
#
#   cmake -DSOURCE=<source dir> -P check_clock.cmake
#
# Not checked: sql/migrations/ numbered below 018 (released, never edited:
# 018_one_clock.sql sets every default they gave clock_timestamp() to
# batch_now()). Exempt, one line each (the line must still be there):
# the loader's bootstrap of batch_schema_version, created before any
# function exists (018 sets its default too).
set(exempt
  "repository/schema.c|installed_at timestamptz not null default clock_timestamp()")
set(first_checked_migration 18)
set(dirs core pg repository framework readers writers console cli include sql cmake)
set(pattern
  "([^a-z0-9_.]now[ \t]*\\([ \t]*\\)|'now'|clock_timestamp|current_timestamp|current_date|current_time([^a-z_]|$)|localtimestamp|statement_timestamp|transaction_timestamp|timeofday)")

set(files)
foreach(d IN LISTS dirs)
  file(GLOB_RECURSE found LIST_DIRECTORIES false RELATIVE ${SOURCE}
       ${SOURCE}/${d}/*.c ${SOURCE}/${d}/*.h ${SOURCE}/${d}/*.sql ${SOURCE}/${d}/*.cmake
       ${SOURCE}/${d}/*.txt ${SOURCE}/${d}/*.in)
  list(APPEND files ${found})
endforeach()
list(SORT files)

set(bad 0)
set(n 0)
foreach(f IN LISTS files)
  if(f STREQUAL "sql/functions/batch_now.sql")
    continue()
  endif()
  if(f MATCHES "^sql/migrations/0*([0-9]+)_")
    if(CMAKE_MATCH_1 LESS first_checked_migration)
      continue()
    endif()
  endif()
  math(EXPR n "${n} + 1")
  file(READ ${SOURCE}/${f} text)
  string(TOLOWER "${text}" text)
  # A ';' would split the lines reported below into list items.
  string(REPLACE ";" "," text "${text}")
  foreach(e IN LISTS exempt)
    string(REPLACE "|" ";" e "${e}")
    list(GET e 0 ef)
    list(GET e 1 eline)
    if(ef STREQUAL f)
      string(FIND "${text}" "${eline}" at)
      if(at LESS 0)
        message(SEND_ERROR "${f}: the exempt line \"${eline}\" is gone: remove its exemption "
                           "from tests/layering/check_clock.cmake")
        set(bad 1)
      endif()
      string(REPLACE "${eline}" "" text "${text}")
    endif()
  endforeach()
  string(REGEX MATCHALL "[^\n]*${pattern}[^\n]*" lines "${text}")
  foreach(l IN LISTS lines)
    string(FIND "${text}" "${l}" at)
    string(SUBSTRING "${text}" 0 ${at} before)
    string(REGEX MATCHALL "\n" nl "${before}")
    list(LENGTH nl line)
    math(EXPR line "${line} + 1")
    string(STRIP "${l}" l)
    message(SEND_ERROR "${f}:${line}: reads the clock directly (use batch_now()): ${l}")
    set(bad 1)
  endforeach()
endforeach()
if(bad)
  message(FATAL_ERROR "the library reads PostgreSQL's clock outside batch_now()")
endif()
message(STATUS "one clock: ${n} source files read the time only through batch_now()")
