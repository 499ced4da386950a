# Every external dependency is found here, the conventional way for each.

find_package(MPI REQUIRED COMPONENTS C)
find_package(OpenMP REQUIRED COMPONENTS C)

# Parallel HDF5: the artifacts are written collectively through MPI-IO.
set(HDF5_PREFER_PARALLEL TRUE)
find_package(HDF5 REQUIRED COMPONENTS C)
if(NOT HDF5_IS_PARALLEL)
  message(FATAL_ERROR
    "Only a serial HDF5 was found (${HDF5_C_LIBRARIES}). taso writes its artifacts "
    "collectively and needs parallel HDF5: on Debian, apt-get install libhdf5-openmpi-dev")
endif()
add_library(taso_hdf5 INTERFACE)
target_include_directories(taso_hdf5 INTERFACE ${HDF5_C_INCLUDE_DIRS})
target_compile_definitions(taso_hdf5 INTERFACE ${HDF5_C_DEFINITIONS})
target_link_libraries(taso_hdf5 INTERFACE ${HDF5_C_LIBRARIES} MPI::MPI_C)

# Z3 and inih ship pkg-config files, no CMake configs.
find_package(PkgConfig REQUIRED)
pkg_check_modules(Z3 REQUIRED IMPORTED_TARGET z3)
pkg_check_modules(INIH REQUIRED IMPORTED_TARGET inih)

# GLPK (Debian's libglpk-dev, no pkg-config file): the integer program of
# eqsat's exact extraction (src/search/extract_exact.c).
find_path(GLPK_INCLUDE_DIR glpk.h REQUIRED)
find_library(GLPK_LIBRARY glpk REQUIRED)
add_library(taso_glpk INTERFACE)
target_include_directories(taso_glpk INTERFACE ${GLPK_INCLUDE_DIR})
target_link_libraries(taso_glpk INTERFACE ${GLPK_LIBRARY})

# The model half (src/model, src/runtime): protobuf-c for ONNX, compiling the
# onnx.proto that Debian's libonnx-dev installs at build time (nothing of
# the schema is copied here), and oneDNN for the CPU backend.
pkg_check_modules(PROTOBUF_C REQUIRED IMPORTED_TARGET libprotobuf-c)
find_program(PROTOC_C protoc-c)
find_file(ONNX_PROTO onnx/onnx.proto PATHS /usr/include /usr/local/include NO_CACHE)
if(NOT PROTOC_C OR NOT ONNX_PROTO)
  message(FATAL_ERROR
    "protoc-c or onnx/onnx.proto not found: on Debian, apt-get install protobuf-c-compiler "
    "libprotobuf-c-dev libonnx-dev")
endif()
find_library(DNNL_LIBRARY dnnl)
find_path(DNNL_INCLUDE_DIR dnnl.h)
if(NOT DNNL_LIBRARY OR NOT DNNL_INCLUDE_DIR)
  message(FATAL_ERROR "oneDNN (dnnl.h, libdnnl) not found: on Debian, apt-get install libdnnl-dev")
endif()
add_library(taso_dnnl INTERFACE)
target_include_directories(taso_dnnl INTERFACE ${DNNL_INCLUDE_DIR})
target_link_libraries(taso_dnnl INTERFACE ${DNNL_LIBRARY})

# CUDA is optional: without it the measurement stage uses its CPU backend.
set(TASO_HAVE_CUDA OFF)
if(TASO_CUDA)
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND)
    find_library(CUDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR})
    find_path(CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  endif()
  if(CUDAToolkit_FOUND AND TARGET CUDA::cublas AND CUDNN_LIBRARY AND CUDNN_INCLUDE_DIR)
    set(TASO_HAVE_CUDA ON)
    message(STATUS "CUDA ${CUDAToolkit_VERSION} with cuDNN and cuBLAS: GPU measurement backend enabled")
  else()
    message(STATUS "CUDA toolkit, cuDNN or cuBLAS not found: building the CPU-only measurement backend")
  endif()
else()
  message(STATUS "TASO_CUDA=OFF: building the CPU-only measurement backend")
endif()
