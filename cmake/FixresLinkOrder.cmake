# Start-up time (docs/architecture.md, "Start-up time"): the programs started most often (fixres,
# the unit tests, dist_worker) name first, among their own shared libraries, those that define the
# most looked-up symbols, so that the dynamic loader's walks through Debian LibTorch's ~290
# libraries end early. scripts/link-order.py works the order out from a probe linked exactly as
# they are (its main empty) and keeps every symbol bound where it was; it writes an empty list,
# and nothing changes, where it cannot.
option(FIXRES_LINK_ORDER "Name the most used shared libraries first (a faster start)" ON)

set(FIXRES_LINK_ORDER_FILE ${CMAKE_BINARY_DIR}/link-order.rsp)
if(FIXRES_LINK_ORDER AND NOT FIXRES_SANITIZE AND CMAKE_SYSTEM_NAME STREQUAL "Linux"
   AND NOT FIXRES_WITH_CUDA)
  find_program(FIXRES_PYTHON3 python3 PATHS /usr/bin NO_DEFAULT_PATH)
  find_program(FIXRES_NM nm)
endif()

# The probe and the list: built before any program that uses it.
function(fixres_link_order_setup)
  if(NOT FIXRES_PYTHON3 OR NOT FIXRES_NM)
    return()
  endif()
  file(WRITE ${CMAKE_BINARY_DIR}/link_probe.cpp "int main() { return 0; }\n")
  add_executable(fixres_link_probe ${CMAKE_BINARY_DIR}/link_probe.cpp)
  target_link_libraries(fixres_link_probe PRIVATE fixres_cli)
  set_target_properties(fixres_link_probe PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
  add_custom_command(OUTPUT ${FIXRES_LINK_ORDER_FILE}
    COMMAND ${FIXRES_PYTHON3} ${PROJECT_SOURCE_DIR}/scripts/link-order.py
            $<TARGET_FILE:fixres_link_probe> ${FIXRES_LINK_ORDER_FILE}
    DEPENDS fixres_link_probe ${PROJECT_SOURCE_DIR}/scripts/link-order.py
    COMMENT "Ordering the shared libraries for a faster start"
    VERBATIM)
  add_custom_target(fixres_link_order DEPENDS ${FIXRES_LINK_ORDER_FILE})
endfunction()

# `target` names the ordered libraries first (before its objects and other libraries).
function(fixres_link_first target)
  if(NOT TARGET fixres_link_order)
    return()
  endif()
  add_dependencies(${target} fixres_link_order)
  target_link_options(${target} PRIVATE "LINKER:--no-as-needed" "@${FIXRES_LINK_ORDER_FILE}")
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${FIXRES_LINK_ORDER_FILE})
endfunction()
