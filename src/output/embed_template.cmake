# Turns the flame graph page template into a C++ source file at build time:
#   cmake -DINPUT=flamegraph_template.html -DOUTPUT=flamegraph_template.cc -P embed_template.cmake
file(READ ${INPUT} content)
string(FIND "${content}" ")SSYM_TPL\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw string delimiter")
endif()
file(WRITE ${OUTPUT}.tmp
  "// Generated from ${INPUT} at build time; do not edit.\n"
  "#include \"output/flamegraph_template.h\"\n"
  "namespace stacksym::output {\n"
  "const std::string_view kFlameGraphTemplate = R\"SSYM_TPL(${content})SSYM_TPL\";\n"
  "}  // namespace stacksym::output\n")
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUTPUT}.tmp)
