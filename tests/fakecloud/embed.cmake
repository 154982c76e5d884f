# Turns a file into a C array: cmake -DIN=catalog.json -DOUT=x.c -DNAME=sym
# -P embed.cmake.  Used to build the default catalog into the binary, so
# tradewind-fakecloud runs from any directory without data files.
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" n)
math(EXPR bytes "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
file(WRITE "${OUT}"
  "/* generated from ${NAME}'s source file by embed.cmake; do not edit */\n"
  "#include <stddef.h>\n"
  "const unsigned char ${NAME}[] = {${body}0x00};\n"
  "const size_t ${NAME}_len = ${bytes};\n")
