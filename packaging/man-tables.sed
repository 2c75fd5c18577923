# man-tables.sed: run by man.cmake over each page pandoc made. In tables,
# lines are not adjusted (a narrow column cannot be: groff says "cannot
# adjust line"), and a long code word may break after a / or _ (\: is
# groff's break point; else "can't break line").
/^\.TS$/i .na
/^\.TE$/a .ad
/^\.TS$/,/^\.TE$/{
	/^\(\.\|T[{}]\)/!s,\([/_]\)\([A-Za-z0-9\\]\),\1\\:\2,g
}
