cmake_minimum_required(VERSION 3.21)
# The library reads time in one place: core/clock.c, behind core/include/clock.h
# (the engine's one clock, which a test or a simulation replaces). Any other
# call into the system's clocks, sleeps or timed waits in the library's
# sources fails this check, named file:line. Comments, string and character
# literals do not count; calls through the interface (cb__clock_poll, ...) and
# names that merely end in one (strftime, cb__repo_partitions_poll) do not match.
#
#   cmake -DROOT=<dir> [-DDIRS=<d1;d2>] [-DSKIP=<path;path>] -P check_clock.cmake
#
# ROOT is the source tree; DIRS its folders to read (*.c, *.h, recursively; by
# default the library's layers and include/); SKIP the files allowed to read
# the clock, relative to ROOT (by default core/clock.c). tests/, examples/ and
# bench/ are not library code and are not read.
if(NOT DEFINED DIRS)
  set(DIRS core framework repository pg readers writers cli console include)
endif()
if(NOT DEFINED SKIP)
  set(SKIP core/clock.c)
endif()

# What reads a clock, sleeps, or waits with a timeout. A call is the name and
# "(", with no identifier character (or member access, for poll) before it.
set(id "[^_a-zA-Z0-9]")
set(calls
  "clock_gettime" "clock_getres" "clock_nanosleep" "gettimeofday" "timespec_get"
  "nanosleep" "usleep" "${id}sleep[ ]*\\(" "${id}time[ ]*\\(" "${id}clock[ ]*\\("
  "${id}alarm[ ]*\\(" "setitimer" "timer_create" "timerfd_"
  "pthread_cond_timedwait" "pthread_cond_clockwait" "pthread_condattr_setclock"
  "pthread_mutex_timedlock" "pthread_timedjoin" "sem_timedwait" "sigtimedwait"
  "[^_a-zA-Z0-9.>]poll[ ]*\\(" "ppoll[ ]*\\(" "epoll_wait" "${id}select[ ]*\\("
  "pselect[ ]*\\(" "CLOCK_MONOTONIC" "CLOCK_REALTIME" "CLOCK_BOOTTIME")
string(JOIN "|" pattern ${calls})

set(files)
foreach(d IN LISTS DIRS)
  file(GLOB_RECURSE found LIST_DIRECTORIES false RELATIVE ${ROOT} ${ROOT}/${d}/*.c
       ${ROOT}/${d}/*.h)
  list(APPEND files ${found})
endforeach()
list(SORT files)
if(SKIP)
  list(REMOVE_ITEM files ${SKIP})
endif()

set(hits 0)
foreach(f IN LISTS files)
  file(READ ${ROOT}/${f} text)
  # Most files name none of it at all: only those are read line by line.
  if(NOT text MATCHES "${pattern}")
    continue()
  endif()
  # One list element per line, kept even when empty (the line numbers):
  # what a CMake list would take apart (";", brackets) is replaced first.
  string(REPLACE ";" " " text "${text}")
  string(REPLACE "[" "<cb-lb>" text "${text}")
  string(REPLACE "]" "<cb-rb>" text "${text}")
  string(REPLACE "\\" "/" text "${text}")
  string(REPLACE "\n" ";" lines "${text}")
  set(n 0)
  set(in_comment 0)
  foreach(line IN LISTS lines)
    math(EXPR n "${n} + 1")
    # Literals first ("/*" or a clock's name in a message is not code), then
    # comments; a block comment may span lines. (A backslash is "/" here, so
    # an escaped quote is not seen as one: good enough for names of calls.)
    string(REGEX REPLACE "'/.'|'[^']'" "''" line "${line}")
    string(REGEX REPLACE "\"[^\"]*\"" "\"\"" line "${line}")
    set(code "")
    while(NOT line STREQUAL "")
      if(in_comment)
        string(FIND "${line}" "*/" at)
        if(at LESS 0)
          set(line "")
        else()
          math(EXPR at "${at} + 2")
          string(SUBSTRING "${line}" ${at} -1 line)
          set(in_comment 0)
        endif()
      else()
        string(FIND "${line}" "/*" block)
        string(FIND "${line}" "//" rest)
        if(rest GREATER_EQUAL 0 AND (block LESS 0 OR rest LESS block))
          string(SUBSTRING "${line}" 0 ${rest} part)
          string(APPEND code "${part}")
          set(line "")
        elseif(block GREATER_EQUAL 0)
          string(SUBSTRING "${line}" 0 ${block} part)
          string(APPEND code "${part} ")
          math(EXPR block "${block} + 2")
          string(SUBSTRING "${line}" ${block} -1 line)
          set(in_comment 1)
        else()
          string(APPEND code "${line}")
          set(line "")
        endif()
      endif()
    endwhile()
    if(" ${code}" MATCHES "${pattern}")
      string(STRIP "${code}" code)
      string(REPLACE "<cb-lb>" "[" code "${code}")
      string(REPLACE "<cb-rb>" "]" code "${code}")
      message("${f}:${n}: reads the clock directly: ${code}")
      math(EXPR hits "${hits} + 1")
    endif()
  endforeach()
endforeach()
list(LENGTH files nfiles)
if(hits GREATER 0)
  message(FATAL_ERROR "${hits} direct clock read(s) outside core/clock.c: use the engine's "
                      "one clock (core/include/clock.h: cb__clock_mono, cb__clock_wall, "
                      "cb__clock_sleep, cb__clock_poll, cb__clock_cond_wait, ...)")
endif()
message(STATUS "one clock: ${nfiles} files read the time only through core/include/clock.h")
