/* A small JSON document model for the comparison suite (suite.h): parse
 * a file or a string into a tree, look members up, build and write
 * trees. Numbers keep the literal they were written with, so a value
 * read back and written again is the same text, and a number that the
 * report prints is the number results.json holds.
 *
 * Not a general JSON library: no \u escapes beyond ASCII, depth <= 64.
 * Thread-safety: none needed (no state).
 */
#ifndef MROCE_SIM_SUITE_JSON_H
#define MROCE_SIM_SUITE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum sj_type { SJ_NULL, SJ_BOOL, SJ_NUM, SJ_STR, SJ_ARR, SJ_OBJ };

struct sj {
    enum sj_type type;
    char *key;  /* member name inside an object, else NULL */
    char *str;  /* SJ_STR: the value; SJ_NUM: the literal */
    double num; /* SJ_NUM: the literal's value */
    bool b;     /* SJ_BOOL */
    struct sj *child, *last, *next; /* SJ_ARR, SJ_OBJ: members in order */
};

/* Parses a whole document; NULL on error with a reason in err. */
struct sj *sj_parse(const char *text, char *err, size_t n);
struct sj *sj_parse_file(const char *path, char *err, size_t n);
void sj_free(struct sj *v);

/* Lookups; NULL, the default or false when absent or of another type. */
struct sj *sj_get(const struct sj *obj, const char *key);
struct sj *sj_path(const struct sj *obj, const char *k1, const char *k2);
bool sj_has_num(const struct sj *obj, const char *key);
double sj_num(const struct sj *obj, const char *key, double dflt);
const char *sj_str(const struct sj *obj, const char *key);
int sj_len(const struct sj *arr);

/* v as "%.<dec>f", or an em dash when v is not a number. The text lives
 * in one of 32 rotating static buffers (no threads): several may appear
 * in one printf. */
const char *sj_fmt(const struct sj *v, int dec);

/* Builders: a new value, or a member appended to obj (returns it; NULL
 * if memory ran out, obj unchanged). Numbers are written with %.6f, or
 * as integers when integral; their value is read back from that text. */
struct sj *sj_new(enum sj_type type);
struct sj *sj_add(struct sj *obj, const char *key, struct sj *v);
struct sj *sj_add_num(struct sj *obj, const char *key, double v);
struct sj *sj_add_int(struct sj *obj, const char *key, long long v);
struct sj *sj_add_str(struct sj *obj, const char *key, const char *s);
struct sj *sj_add_bool(struct sj *obj, const char *key, bool b);
struct sj *sj_add_null(struct sj *obj, const char *key);
struct sj *sj_add_obj(struct sj *obj, const char *key);
struct sj *sj_add_arr(struct sj *obj, const char *key);
/* Replace (or add) a number or string member. */
struct sj *sj_set_num(struct sj *obj, const char *key, double v);
struct sj *sj_set_str(struct sj *obj, const char *key, const char *s);

/* Writes v indented; objects of scalars only stay on one line. Returns 0
 * or -1 on a write error. */
int sj_write(FILE *f, const struct sj *v);
int sj_write_file(const char *path, const struct sj *v);

#endif
