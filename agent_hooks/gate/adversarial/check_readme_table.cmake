# cmake -DDRIVER=attngate_adversarial -DCATALOGUE=cheats.yaml -DREADME=README.md -P check_readme_table.cmake
# Fails unless README.md holds the catalogue's table exactly as `--render-table` prints it, and
# says how to regenerate it.
execute_process(COMMAND ${DRIVER} --render-table --catalogue=${CATALOGUE} OUTPUT_VARIABLE table RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "attngate_adversarial --render-table failed (${rc})")
endif()
file(READ ${README} readme)
string(FIND "${readme}" "${table}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${README}: its table is not the catalogue's. Regenerate it with\n"
                      "  attngate_adversarial --render-table --catalogue=${CATALOGUE}\n"
                      "and paste it in place of the old one. The catalogue renders as:\n${table}")
endif()
message(STATUS "README table matches the catalogue (${CATALOGUE})")
