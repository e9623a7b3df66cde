# fixres_layer(NAME DEPS targets... [TORCH]): the library fixres_NAME from src/fixres/NAME/*.cpp.
# Its public include root holds only fixres/NAME (a link to src/fixres/NAME), so a source sees
# the headers of its own layer and of the layers it links, nothing above. TORCH: the layer's
# sources share the precompiled LibTorch header (built once, in fixres_pch).
set(FIXRES_INCLUDE_ROOTS ${CMAKE_BINARY_DIR}/include)

# The LibTorch layers are glue around LibTorch's kernels: their work is calls into LibTorch, the
# pixel loops live in image/ (no LibTorch, -O3). At -O1 their translation units compile in a
# third less time (code generation is two thirds of a unit at -O3); floats are unchanged (ISO
# C++ mode: no contraction into FMA at any level). docs/architecture.md has the measurements.
set(FIXRES_GLUE_OPTIONS $<$<CONFIG:Release>:-O1>)

# The precompiled header every LibTorch layer reuses.
add_library(fixres_pch OBJECT ${PROJECT_SOURCE_DIR}/cmake/pch.cpp)
target_link_libraries(fixres_pch PUBLIC fixres::deps)
target_precompile_headers(fixres_pch PRIVATE ${PROJECT_SOURCE_DIR}/cmake/Pch.h)
target_compile_options(fixres_pch PRIVATE ${FIXRES_GLUE_OPTIONS})

function(fixres_layer name)
  cmake_parse_arguments(L "TORCH" "" "DEPS" ${ARGN})
  set(root ${FIXRES_INCLUDE_ROOTS}/${name})
  file(MAKE_DIRECTORY ${root}/fixres)
  if(NOT EXISTS ${root}/fixres/${name})
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/src/fixres/${name} ${root}/fixres/${name} SYMBOLIC)
  endif()
  file(GLOB sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/fixres/${name}/*.cpp)
  add_library(fixres_${name} STATIC ${sources})
  target_include_directories(fixres_${name} PUBLIC ${root})
  target_compile_definitions(fixres_${name} PUBLIC FIXRES_VERSION="${PROJECT_VERSION}")
  target_compile_options(fixres_${name} PRIVATE -Wall -Wextra -Wno-unused-parameter)
  target_link_libraries(fixres_${name} PUBLIC ${L_DEPS} fixres::deps)
  if(L_TORCH)
    target_precompile_headers(fixres_${name} REUSE_FROM fixres_pch)
    target_compile_options(fixres_${name} PRIVATE ${FIXRES_GLUE_OPTIONS})
  endif()
  if(FIXRES_UNITY)
    set_target_properties(fixres_${name} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${FIXRES_UNITY_BATCH})
  endif()
endfunction()
