# Writes OUTPUT, a C++ source defining `std::string_view NAME` in namespace
# NAMESPACE with the text of INPUT, for files the library must carry with it
# (image/agents.txt, image/Dockerfile). Run with cmake -P at build time.
file(READ "${INPUT}" text)
string(FIND "${text}" ")mojoup_embed\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} holds the raw-string delimiter )mojoup_embed\"")
endif()
file(WRITE "${OUTPUT}.tmp"
  "// Generated from ${INPUT} by cmake/embed_text.cmake; do not edit.\n"
  "#include <string_view>\n"
  "namespace ${NAMESPACE} {\n"
  "extern const std::string_view ${NAME};\n"
  "const std::string_view ${NAME} = R\"mojoup_embed(${text})mojoup_embed\";\n"
  "}  // namespace ${NAMESPACE}\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
