# Write one document of the CLI's own (`PROG help --format FORMAT`) into OUT:
# the manual page or the bash completion, from the command table the
# program's --help prints. -D PROG=... -D FORMAT=man|bash -D OUT=...
execute_process(COMMAND ${PROG} help --format ${FORMAT}
                OUTPUT_FILE ${OUT}.tmp RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  file(REMOVE ${OUT}.tmp)
  message(FATAL_ERROR "${PROG} help --format ${FORMAT}: exit ${rc}: ${err}")
endif()
file(RENAME ${OUT}.tmp ${OUT})
