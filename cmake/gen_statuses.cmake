# Generates, from TABLE (sql/statuses.txt), the C table C_OUT and the SQL
# function files in SQL_DIR (batch_status_is_live.sql, batch_statuses.sql),
# and checks the CHECK lists of the migrations MIGRATIONS ('|'-separated).
# See sql/statuses.txt.
cmake_policy(VERSION 3.21)
string(REPLACE "|" ";" MIGRATIONS "${MIGRATIONS}")
file(STRINGS ${TABLE} lines REGEX "^[A-Z]")
set(names)
set(live)
set(c_rows)
set(asserts)
set(sql_rows)
set(i 0)
foreach(l ${lines})
  string(REGEX REPLACE "[ \t]+" ";" f "${l}")
  list(LENGTH f n)
  if(NOT n EQUAL 3)
    message(FATAL_ERROR "${TABLE}: '${l}': want NAME LIVE RESTARTABLE")
  endif()
  list(GET f 0 name)
  list(GET f 1 is_live)
  list(GET f 2 restartable)
  foreach(v ${is_live} ${restartable})
    if(NOT v MATCHES "^(yes|no)$")
      message(FATAL_ERROR "${TABLE}: '${l}': yes or no, not ${v}")
    endif()
  endforeach()
  list(APPEND names "'${name}'")
  set(l_c 0)
  set(r_c 0)
  set(l_sql false)
  set(r_sql false)
  if(is_live STREQUAL "yes")
    list(APPEND live "'${name}'")
    set(l_c 1)
    set(l_sql true)
  endif()
  if(restartable STREQUAL "yes")
    set(r_c 1)
    set(r_sql true)
  endif()
  string(APPEND c_rows "\t{ \"${name}\", ${l_c}, ${r_c} },\n")
  string(APPEND asserts "_Static_assert(CB_STATUS_${name} == ${i}, \"CB_STATUS_${name} is not entry ${i} of sql/statuses.txt\");\n")
  if(i GREATER 0)
    string(APPEND sql_rows ",\n")
  endif()
  string(APPEND sql_rows "        ('${name}', ${i}, ${l_sql}, ${r_sql})")
  math(EXPR i "${i} + 1")
endforeach()
string(APPEND asserts "_Static_assert(CB_STATUS_UNKNOWN + 1 == ${i}, \"cb_status has statuses that sql/statuses.txt lacks\");\n")
list(JOIN names ", " names_sql)
list(JOIN live ", " live_sql)

# The CHECK lists, in the last migration that sets each of them.
foreach(ck batch_job_execution_status_ck batch_step_execution_status_ck)
  set(found "")
  foreach(m ${MIGRATIONS})
    file(READ ${m} text)
    string(REGEX MATCH "${ck} CHECK \\(status IN[ \n]*\\(([^)]*)\\)" hit "${text}")
    if(hit)
      string(REGEX REPLACE "[ \n]+" "" found "${CMAKE_MATCH_1}")
    endif()
  endforeach()
  string(REPLACE " " "" want "${names_sql}")
  if(NOT found STREQUAL want)
    message(FATAL_ERROR "${ck} in sql/migrations/ lists (${found}), sql/statuses.txt (${want}): "
                        "write a migration that changes the constraint")
  endif()
endforeach()

set(head "-- Generated from sql/statuses.txt by cmake/gen_statuses.cmake; do not edit.\n")
file(WRITE ${SQL_DIR}/batch_status_is_live.sql.tmp "${head}\
-- Whether an execution (job or step) in status p_status is live: it may still
-- be running, and no other execution of its instance may start. The one
-- definition of \"live\": SQL statements and PL/pgSQL functions call it.
-- One IMMUTABLE SQL expression, so the planner inlines it into the calling
-- statement, where it matches the partial indexes whose predicate lists the
-- same statuses (batch_job_execution_one_live_ux) as the literal list did.
CREATE OR REPLACE FUNCTION batch_status_is_live(p_status text)
RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT p_status IN (${live_sql})
$$;
")
file(WRITE ${SQL_DIR}/batch_statuses.sql.tmp "${head}\
-- The status vocabulary: every status, in the order of the C enum cb_status,
-- whether it is live and whether a restart may follow it.
CREATE OR REPLACE FUNCTION batch_statuses()
RETURNS TABLE (name text, ordinal int, live boolean, restartable boolean)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    VALUES
${sql_rows}
$$;
")
file(WRITE ${C_OUT}.tmp "/* Generated from sql/statuses.txt by cmake/gen_statuses.cmake; do not edit. */
#include <stddef.h>

#include \"cbatch/repository.h\"
#include \"statuses.h\"

${asserts}
const struct cb__status_word cb__statuses[] = {
${c_rows}};
const size_t cb__statuses_count = ${i};
")
foreach(f ${SQL_DIR}/batch_status_is_live.sql ${SQL_DIR}/batch_statuses.sql ${C_OUT})
  file(COPY_FILE ${f}.tmp ${f} ONLY_IF_DIFFERENT)
endforeach()
