/* l3bench --compare's report: the rows and the measurements beside them,
 * as text (the table, the other lines, the targets met or not) or as
 * JSON, on stdout. */
#ifndef L3_COMPARE_REPORT_H
#define L3_COMPARE_REPORT_H

#include "compare_extras.h"
#include "compare_rounds.h"

/* The report as text: the table of rows, the lines of the measurements
 * beside them, then the targets, each said met or NOT met. */
void cmp_report_text(const cmp_run *cx, const cmp_row *rows, const cmp_extras *x);

/* The report as one JSON object. */
void cmp_report_json(const cmp_run *cx, const cmp_row *rows, const cmp_extras *x);

#endif
