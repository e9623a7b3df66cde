# Dependency discovery: LibTorch (Debian's CPU build or a CUDA build from a PyTorch install on
# CMAKE_PREFIX_PATH), libjpeg(-turbo), libpng, zlib, CLI11, nlohmann-json, Gloo headers when present,
# libcurl (linked by the common layer only: the weight downloader), libwebp, libtiff and stb_image
# (the image layer), each optional under FIXRES_OPTIONAL_DEPS.
option(FIXRES_REQUIRE_CUDA "Fail the configure step unless the LibTorch found has CUDA" OFF)
find_package(Threads REQUIRED)
find_package(Torch REQUIRED)
# A PyTorch wheel's TorchConfig.cmake looks for c10 on the system's paths before its own lib/, so
# on a machine that also has Debian's libtorch-dev it names /usr/lib/.../libc10.so (1.13): a
# program then loads both c10s, and one that needs Debian's first aborts in LibTorch's static
# initialisers. Take the c10 beside the LibTorch found.
if(c10_LIBRARY AND EXISTS "${TORCH_INSTALL_PREFIX}/lib/libc10.so")
  get_filename_component(_fixres_c10_dir "${c10_LIBRARY}" DIRECTORY)
  get_filename_component(_fixres_c10_dir "${_fixres_c10_dir}" REALPATH)
  get_filename_component(_fixres_torch_lib "${TORCH_INSTALL_PREFIX}/lib" REALPATH)
  if(NOT _fixres_c10_dir STREQUAL _fixres_torch_lib)
    message(STATUS "fixres: c10 from ${_fixres_torch_lib}, not ${c10_LIBRARY}")
    set(_fixres_libs "")
    foreach(_fixres_lib IN LISTS TORCH_LIBRARIES)
      if(_fixres_lib STREQUAL c10_LIBRARY)
        set(_fixres_lib "${TORCH_INSTALL_PREFIX}/lib/libc10.so")
      endif()
      list(APPEND _fixres_libs "${_fixres_lib}")
    endforeach()
    set(TORCH_LIBRARIES "${_fixres_libs}")
    set(c10_LIBRARY "${TORCH_INSTALL_PREFIX}/lib/libc10.so" CACHE FILEPATH "" FORCE)
  endif()
endif()
find_package(JPEG REQUIRED)
find_package(PNG REQUIRED)
find_package(ZLIB REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
find_package(nlohmann_json CONFIG REQUIRED)
# FIXRES_OPTIONAL_DEPS: build without libcurl (no downloader), libwebp, libtiff or stb_image
# (no WebP, TIFF or BMP images) where they are absent, as on an offline GPU host whose system lacks
# their headers; `fixres version` then names what was left out. Off by default: the Debian build
# requires them all (scripts/install-deps.sh installs them).
option(FIXRES_OPTIONAL_DEPS "Leave out the downloader and image formats whose libraries are absent" OFF)
if(FIXRES_OPTIONAL_DEPS)
  set(_fixres_need "")
else()
  set(_fixres_need REQUIRED)
endif()
find_package(CURL ${_fixres_need})
# The other image formats ImageFolder lists: WebP (libwebp with its animation decoder, as Pillow
# reads WebP), TIFF (libtiff) and BMP (stb_image's header, compiled into the image layer).
find_package(TIFF ${_fixres_need})
find_path(FIXRES_WEBP_INCLUDE webp/demux.h)
find_library(FIXRES_WEBP_LIBRARY webp)
find_library(FIXRES_WEBPDEMUX_LIBRARY webpdemux)
find_path(FIXRES_STB_INCLUDE stb_image.h PATH_SUFFIXES stb)
add_library(fixres_download INTERFACE)
# SHA-256 (common/Sha256.h) from OpenSSL's libcrypto.
find_package(OpenSSL REQUIRED COMPONENTS Crypto)
target_link_libraries(fixres_download INTERFACE OpenSSL::Crypto)
add_library(fixres_image_formats INTERFACE)
if(CURL_FOUND)
  target_link_libraries(fixres_download INTERFACE CURL::libcurl)
  target_compile_definitions(fixres_download INTERFACE FIXRES_WITH_CURL=1)
else()
  message(STATUS "fixres: no libcurl: the weight downloader is left out of this build")
endif()
if(TIFF_FOUND)
  target_link_libraries(fixres_image_formats INTERFACE TIFF::TIFF)
  target_compile_definitions(fixres_image_formats INTERFACE FIXRES_WITH_TIFF=1)
else()
  message(STATUS "fixres: no libtiff: TIFF images are left out of this build")
endif()
if(FIXRES_WEBP_INCLUDE AND FIXRES_WEBP_LIBRARY AND FIXRES_WEBPDEMUX_LIBRARY)
  target_include_directories(fixres_image_formats INTERFACE ${FIXRES_WEBP_INCLUDE})
  target_link_libraries(fixres_image_formats INTERFACE ${FIXRES_WEBPDEMUX_LIBRARY} ${FIXRES_WEBP_LIBRARY})
  target_compile_definitions(fixres_image_formats INTERFACE FIXRES_WITH_WEBP=1)
elseif(FIXRES_OPTIONAL_DEPS)
  message(STATUS "fixres: no libwebp/libwebpdemux: WebP images are left out of this build")
else()
  message(FATAL_ERROR "fixres: libwebp and libwebpdemux not found (Debian: libwebp-dev)")
endif()
if(FIXRES_STB_INCLUDE)
  target_include_directories(fixres_image_formats INTERFACE ${FIXRES_STB_INCLUDE})
  target_compile_definitions(fixres_image_formats INTERFACE FIXRES_WITH_BMP=1)
elseif(FIXRES_OPTIONAL_DEPS)
  message(STATUS "fixres: no stb_image.h: BMP images are left out of this build")
else()
  message(FATAL_ERROR "fixres: stb_image.h not found (Debian: libstb-dev)")
endif()

add_library(fixres_deps INTERFACE)
add_library(fixres::deps ALIAS fixres_deps)
target_link_libraries(fixres_deps INTERFACE
  ${TORCH_LIBRARIES} JPEG::JPEG PNG::PNG ZLIB::ZLIB CLI11::CLI11 nlohmann_json::nlohmann_json Threads::Threads)
# libstdc++ first among the shared libraries a program needs: the PyTorch wheels' libtorch.so and
# libtorch_cpu.so carry (and export) their own copy of std::filesystem from the toolchain they
# were built with, and a program listing them first binds its std::filesystem calls to that copy
# (remove_all through it crashed at exit). Debian's LibTorch exports none; the order is harmless
# there.
target_link_options(fixres_deps INTERFACE "LINKER:--push-state,--no-as-needed,-lstdc++,--pop-state")
# TORCH_CXX_FLAGS carries the C++ ABI define of the LibTorch build.
separate_arguments(_torch_flags UNIX_COMMAND "${TORCH_CXX_FLAGS}")
target_compile_options(fixres_deps INTERFACE ${_torch_flags})

if(TARGET torch_cuda OR TORCH_CUDA_LIBRARIES)
  set(FIXRES_WITH_CUDA ON)
  target_compile_definitions(fixres_deps INTERFACE FIXRES_WITH_CUDA=1)
  message(STATUS "fixres: CUDA LibTorch found, GPU paths enabled")
  # nvJPEG (--decode-on gpu): the nvidia-nvjpeg wheel beside this PyTorch (requirements-torch2.txt),
  # else the CUDA toolkit's.
  find_path(FIXRES_NVJPEG_INCLUDE nvjpeg.h
            HINTS "${TORCH_INSTALL_PREFIX}/../nvidia/cu13/include" /usr/local/cuda/include)
  find_library(FIXRES_NVJPEG_LIBRARY NAMES nvjpeg libnvjpeg.so.13
               HINTS "${TORCH_INSTALL_PREFIX}/../nvidia/cu13/lib" /usr/local/cuda/lib64)
  if(FIXRES_NVJPEG_INCLUDE AND FIXRES_NVJPEG_LIBRARY)
    target_include_directories(fixres_deps SYSTEM INTERFACE "${FIXRES_NVJPEG_INCLUDE}")
    target_link_libraries(fixres_deps INTERFACE "${FIXRES_NVJPEG_LIBRARY}")
    target_compile_definitions(fixres_deps INTERFACE FIXRES_WITH_NVJPEG=1)
    message(STATUS "fixres: nvJPEG at ${FIXRES_NVJPEG_LIBRARY}")
  else()
    message(STATUS "fixres: no nvJPEG (nvjpeg.h, libnvjpeg): --decode-on gpu left out")
  endif()
else()
  set(FIXRES_WITH_CUDA OFF)
  if(FIXRES_REQUIRE_CUDA)
    message(FATAL_ERROR "fixres: FIXRES_REQUIRE_CUDA is set but the LibTorch at ${TORCH_INSTALL_PREFIX} "
                        "has no CUDA (torch_cuda not found)")
  endif()
  message(STATUS "fixres: CPU LibTorch")
endif()
# Gloo (the CPU collectives) is inside every LibTorch, but its headers come with Debian's LibTorch
# only: the PyTorch wheels ship none, and a CUDA build then takes Debian's libgloo-dev headers
# when they are installed (docs/pytorch2.md), NCCL alone when not.
find_path(FIXRES_GLOO_INCLUDE gloo/algorithm.h)
if(FIXRES_GLOO_INCLUDE)
  message(STATUS "fixres: Gloo headers at ${FIXRES_GLOO_INCLUDE}")
else()
  message(STATUS "fixres: no Gloo headers: CPU collectives left out of this build")
endif()
message(STATUS "fixres: LibTorch ${Torch_VERSION} at ${TORCH_INSTALL_PREFIX}")
