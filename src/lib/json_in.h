/* A small JSON reader: parses one document into a tree (cargo's
 * --message-format=json lines, `cargo metadata`). Not for large inputs:
 * the whole document is held in memory.
 *
 *   char err[128];
 *   struct jv *doc = jv_parse(line, err, sizeof(err));   // NULL: err says why
 *   const char *reason = jv_str(jv_get(doc, "reason"));  // NULL if absent or not a string
 *   const struct jv *kinds = jv_get(jv_get(doc, "target"), "kind");
 *   for (size_t i = 0; i < jv_len(kinds); i++) ... jv_str(jv_at(kinds, i)) ...
 *   jv_free(doc);
 *
 * Every accessor takes NULL and a value of the wrong type, and answers
 * NULL / 0, so lookups chain without checks in between. */
#ifndef SFTRACE_LIB_JSON_IN_H
#define SFTRACE_LIB_JSON_IN_H

#include <stddef.h>

enum jv_type { JV_NULL, JV_FALSE, JV_TRUE, JV_NUMBER, JV_STRING, JV_ARRAY, JV_OBJECT };

struct jv {
	enum jv_type type;
	double number;       /* JV_NUMBER */
	char *string;        /* JV_STRING: UTF-8, NUL-terminated (an embedded \u0000 cuts it) */
	size_t n;            /* JV_ARRAY, JV_OBJECT: items */
	struct jv *items;    /* JV_ARRAY, JV_OBJECT */
	char **keys;         /* JV_OBJECT: keys[i] names items[i] */
};

/* The document in text (NUL-terminated), or NULL with a message in err. */
struct jv *jv_parse(const char *text, char *err, size_t errlen);
void jv_free(struct jv *v);

/* An object's member (the first of that name), or NULL. */
const struct jv *jv_get(const struct jv *obj, const char *key);
/* An array's item i, or NULL. */
const struct jv *jv_at(const struct jv *arr, size_t i);
/* An array's item count (0 for anything else). */
size_t jv_len(const struct jv *arr);
/* A string's text, or NULL. */
const char *jv_str(const struct jv *v);
/* 1 for true, 0 for anything else. */
int jv_true(const struct jv *v);
/* 1 if arr is an array holding the string s. */
int jv_has_str(const struct jv *arr, const char *s);

#endif
