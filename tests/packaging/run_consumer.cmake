# Installs this build into a scratch prefix, builds tests/packaging/consumer against the
# installed package, and runs the consumer's ctest. Invoked by ctest with -D BUILD_DIR,
# SOURCE_DIR, WORK_DIR, PYTHON (an interpreter with the adapter kit installed), and the
# build's CXX_FLAGS and EXE_LINKER_FLAGS.
file(REMOVE_RECURSE ${WORK_DIR})
function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "packaging test: '${ARGN}' failed with ${rc}")
  endif()
endfunction()
step(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix)
step(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/packaging/consumer -B ${WORK_DIR}/build -G Ninja
     -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DPYTHON=${PYTHON}
     "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${EXE_LINKER_FLAGS}")
step(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
step(${CMAKE_CTEST_COMMAND} --test-dir ${WORK_DIR}/build --output-on-failure)
