# Writes OUT, a C file defining `const char NAME[]` as the text of IN, the
# way it is embedded: lines that are only a // comment, blank lines and
# leading spaces are dropped (the text is a script embedded in SVG and in
# markdown, where a blank line would end the HTML block).
#   cmake -DIN=file -DOUT=file.c -DNAME=symbol -P embed_text.cmake
file(READ ${IN} text)
# What would break the text where it is embedded: "]]>" ends its CDATA,
# "</" may close the markdown's HTML block, "$" and a backslash before a
# bracket are math to the classic notebook's MathJax.
foreach(bad "]]>" "</" "$" "\\(" "\\[")
  string(FIND "${text}" "${bad}" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "${IN} holds \"${bad}\", which cannot stand where it is embedded")
  endif()
endforeach()
# Semicolons and brackets mean something to CMake's lists: stand-ins
# while the text is split into lines.
string(REPLACE ";" "@SC@" text "${text}")
string(REPLACE "[" "@LB@" text "${text}")
string(REPLACE "]" "@RB@" text "${text}")
string(REPLACE "\n" ";" lines "${text}")
set(body "")
foreach(line IN LISTS lines)
  string(REGEX REPLACE "^[ \t]+" "" line "${line}")
  if(line STREQUAL "" OR line MATCHES "^//")
    continue()
  endif()
  string(REPLACE "\\" "\\\\" line "${line}")
  string(REPLACE "\"" "\\\"" line "${line}")
  string(APPEND body "    \"${line}\\n\"\n")
endforeach()
string(REPLACE "@SC@" ";" body "${body}")
string(REPLACE "@LB@" "[" body "${body}")
string(REPLACE "@RB@" "]" body "${body}")
file(WRITE ${OUT} "/* Generated from ${IN} by cmake/embed_text.cmake. */\nconst char ${NAME}[] =\n${body};\n")
