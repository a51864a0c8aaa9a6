# Turns a file into a C array: cmake -DIN=file -DOUT=file.c -DNAME=symbol -P embed.cmake
# (the status page is one self-contained HTML file, served from rally-run's memory).
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" n)
math(EXPR nbytes "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" body "${body}")
file(WRITE "${OUT}" "/* made from ${NAME}'s source by cmake/embed.cmake */\n#include <stddef.h>\nconst unsigned char ${NAME}[] = {\n${body}0x00};\nconst size_t ${NAME}_nbytes = ${nbytes};\n")
