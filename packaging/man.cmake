# man.cmake: one man page from one docs/ page, run by packaging/
# (cmake -DPANDOC= -DIN=docs/PAGE.md -DOUT=NAME.1.gz -DNAME= -DVERSION=
# [-DSUMMARY=] [-DMALLOCK=bin/mallock -DCMDS=CMD[,CMD]] -P).
# The page's first heading ("# mallock-diff(1)") is replaced by the man
# page's title line (NAME, section 1); its "## Name", "## Synopsis"...
# become the sections, upper-cased as man pages have them.
# With CMDS, the OPTIONS section opens with each command's option list as
# `mallock help --man CMD` writes it from the table its parser and --help
# use (one .SS per command when there are several); the docs page's own
# "## Options" text follows it.
file(READ ${IN} text)
string(REGEX REPLACE "^# [^\n]*\n" "" text "${text}")
string(REGEX MATCHALL "\n## [^\n]*" heads "${text}")
foreach(h IN LISTS heads)
  string(TOUPPER "${h}" H)
  string(REPLACE "${h}" "${H}" text "${text}")
endforeach()
# whatis(1) and lintian want "NAME - summary" there, the page's own name.
string(REGEX MATCH "\n## NAME\n\n[^\n]*( -[^\n]*(\n[^\n#][^\n]*)*)" name_sec
  "${text}")
if(NOT name_sec)
  message(FATAL_ERROR "${IN}: no '## Name' section with 'NAME - summary'")
endif()
# A page made from another's (detach from attach's) gives its own summary.
set(summary "${CMAKE_MATCH_1}")
if(DEFINED SUMMARY)
  set(summary " - ${SUMMARY}")
endif()
string(REPLACE "${name_sec}" "\n## NAME\n\n${NAME}${summary}" text
  "${text}")
file(WRITE ${OUT}.md "${text}")
execute_process(COMMAND ${PANDOC} --standalone --from=gfm --to=man
    --shift-heading-level-by=-1
    --metadata=title:${NAME} --metadata=section:1
    "--metadata=header:mallock manual"
    "--metadata=footer:mallock ${VERSION}" --metadata=date:
    ${OUT}.md --output=${OUT}.tmp
  RESULT_VARIABLE rc ERROR_VARIABLE err)
file(REMOVE ${OUT}.md)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pandoc ${IN}: ${err}")
endif()
if(DEFINED CMDS)
  string(REPLACE "," ";" cmds "${CMDS}")
  list(LENGTH cmds ncmds)
  set(frag "")
  foreach(cmd IN LISTS cmds)
    execute_process(COMMAND ${MALLOCK} help --man ${cmd}
      OUTPUT_VARIABLE list RESULT_VARIABLE rc ERROR_VARIABLE err)
    if(NOT rc EQUAL 0 OR NOT list MATCHES "^\\.TP\n")
      message(FATAL_ERROR "mallock help --man ${cmd}: ${rc} ${err}")
    endif()
    if(ncmds GREATER 1)
      string(APPEND frag ".SS \"mallock ${cmd}\"\n")
    endif()
    string(APPEND frag "${list}")
  endforeach()
  file(READ ${OUT}.tmp page)
  string(FIND "${page}" "\n.SH OPTIONS\n" at)
  if(at LESS 0)
    message(FATAL_ERROR "${IN}: no '## Options' section for the options")
  endif()
  string(REPLACE "\n.SH OPTIONS\n" "\n.SH OPTIONS\n${frag}.SS \"In detail\"\n" page
    "${page}")
  file(WRITE ${OUT}.tmp "${page}")
endif()
# Tables made quiet for groff (man-tables.sed says how).
execute_process(COMMAND sed -i -f ${CMAKE_CURRENT_LIST_DIR}/man-tables.sed
    ${OUT}.tmp RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "sed ${OUT}.tmp failed")
endif()
execute_process(COMMAND gzip -9n -c ${OUT}.tmp OUTPUT_FILE ${OUT}
  RESULT_VARIABLE rc)
file(REMOVE ${OUT}.tmp)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "gzip ${OUT} failed")
endif()
