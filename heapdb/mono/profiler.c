/*
 * heapdb's Mono profiler module: streams the managed heap as a snap.bin file (docs/format.md).
 *
 * Loaded by `mono --profile=heapdb[:OPTIONS] prog.exe` (libmono-profiler-heapdb.so on the library
 * path). A capture forces two full collections: the first empties the nursery so that the second,
 * during which the walk happens, moves (almost) nothing. Inside the second one, with the world
 * stopped, Mono reports its roots (gc_roots) while it marks, and at MONO_GC_EVENT_PRE_START_WORLD
 * the module walks the heap (mono_gc_walk_heap) and writes each object as it is visited. Memory:
 * one chunk of columns, the interned strings and types, a per-class field table, and the roots of
 * the capture (roots are few next to objects); never the object graph.
 *
 * Options (comma separated):
 *   output=PATH        where captures go; %p is the pid, %n the capture number (from 1), %% a %.
 *                      tcp:HOST:PORT streams the same bytes over a TCP connection instead.
 *                      Default heapdb-%p-%n.snapbin.
 *   signal[=USR1|USR2] capture when the process gets that signal (default SIGUSR2).
 *   every=N            capture after every N-th garbage collection (a trigger that comes while
 *                      another is pending joins it).
 *   names=N            keep at most N bytes of a System.String's contents as its name (default 1024).
 *   debug              say on stderr what each capture wrote and what roots Mono reported.
 * The managed call Heapdb.Capture(path) (Heapdb.dll) captures at once, to path (or to output when
 * path is null).
 *
 * Threads: a signal handler only writes a byte to a pipe; a helper thread reads it and wakes the
 * finalizer thread, which runs the collections (as Mono's own log profiler does for heapshots).
 *
 * Why this file is long: it is a whole producer in one translation unit (Mono loads one library),
 * the snap.bin writer (chunks, interning, columns), the class tables, the root bookkeeping and the
 * triggers; splitting it would mean a build of several objects for no reader's benefit.
 * docs/format.md, "Producers", says what it writes and what Mono does not report.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include <mono/jit/jit.h>
#include <mono/metadata/appdomain.h>
#include <mono/metadata/class.h>
#include <mono/metadata/debug-helpers.h>
#include <mono/metadata/loader.h>
#include <mono/metadata/mono-gc.h>
#include <mono/metadata/object.h>
#include <mono/metadata/profiler.h>
#include <mono/utils/mono-publib.h>

/* Exported by libmonosgen but in no public header: where a class's static fields live. */
extern void *mono_vtable_get_static_field_data(MonoVTable *vt);

/* snap.bin constants (docs/format.md; loader/formats/snapbin/layout.py declares them for Python). */
enum { K_METADATA = 1, K_STRINGS = 2, K_TYPES = 3, K_OBJECTS = 4, K_ROOTS = 5, K_NAMES = 6, K_TRAILER = 15 };
enum { E_ELEMENT = 1, E_PROPERTY = 2, E_INTERNAL = 3 };
#define MAX_OBJECTS 65536 /* per OBJECTS chunk, as the reference writer */
#define MAX_REFS 1048576
#define MAX_NAMES 65536
#define LARGE_OBJECT 8000 /* sgen puts objects above this many bytes in its large object space */

struct _MonoProfiler {
	int unused;
};
static struct _MonoProfiler profiler_state;
static MonoProfilerHandle handle;

/* ---- options ---- */
static char *opt_output = "heapdb-%p-%n.snapbin";
static int opt_signal = 0;
static int opt_every = 0;
static size_t opt_names = 1024;
static int opt_debug = 0;

/* ---- capture state (touched by the GC thread with the world stopped, or under capture_lock) ---- */
static pthread_mutex_t capture_lock = PTHREAD_MUTEX_INITIALIZER; /* one capture at a time */
static volatile int requested;                                  /* signal/every: capture at the next chance */
static int active;                                              /* this collection is the capture's */
static int capture_number;
static int out_fd = -1;
static int out_failed;
static long long gc_seen;  /* collections the program caused, for every=N */
/* Set on the thread running a capture: sgen collects on the thread that asks, so the capture's
 * own collections are the ones this thread sees, and every=N does not count them. */
static __thread int capturing; /* 1: the first collection, 2: the one the walk happens in */

/* ---- growable byte buffer ---- */
typedef struct {
	uint8_t *p;
	size_t len, cap;
} Buf;

static void buf_reserve(Buf *b, size_t more)
{
	if (b->len + more <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 4096;
	while (cap < b->len + more)
		cap *= 2;
	b->p = realloc(b->p, cap);
	if (!b->p)
		abort();
	b->cap = cap;
}
static void buf_put(Buf *b, const void *data, size_t n)
{
	buf_reserve(b, n);
	memcpy(b->p + b->len, data, n);
	b->len += n;
}
static void put_u8(Buf *b, uint8_t v) { buf_put(b, &v, 1); }
static void put_u32(Buf *b, uint32_t v) { buf_put(b, &v, 4); } /* little-endian machines only (x86-64, arm64) */
static void put_u64(Buf *b, uint64_t v) { buf_put(b, &v, 8); }

/* ---- output ---- */
static void out_write(const void *data, size_t n)
{
	const uint8_t *p = data;
	while (n && !out_failed) {
		ssize_t w = write(out_fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "heapdb: cannot write the capture: %s\n", strerror(errno));
			out_failed = 1;
			return;
		}
		p += w;
		n -= (size_t)w;
	}
}

static uint64_t totals[7]; /* chunks, strings, types, objects, refs, roots, names: the trailer's counts */
enum { T_CHUNKS, T_STRINGS, T_TYPES, T_OBJECTS, T_REFS, T_ROOTS, T_NAMES };

static void write_chunk(uint16_t kind, uint32_t count, const Buf *payload)
{
	uint8_t h[32];
	uint64_t len = payload->len;
	uint32_t pcrc = (uint32_t)crc32(0L, payload->p, (uInt)payload->len), hcrc;
	memcpy(h, &kind, 2);
	h[2] = 0; /* codec: stored */
	h[3] = 1; /* critical */
	memcpy(h + 4, &count, 4);
	memcpy(h + 8, &len, 8);
	memcpy(h + 16, &len, 8);
	memcpy(h + 24, &pcrc, 4);
	hcrc = (uint32_t)crc32(0L, h, 28);
	memcpy(h + 28, &hcrc, 4);
	out_write(h, 32);
	out_write(payload->p, payload->len);
	totals[T_CHUNKS]++;
}

/* ---- string interning (open addressing over an arena of every string written) ---- */
typedef struct {
	uint64_t hash;
	uint32_t offset, length, index;
} StrSlot;
static Buf arena;                            /* bytes of all interned strings */
static StrSlot *str_table;                   /* capacity str_cap, power of two */
static size_t str_cap, str_count;            /* str_count = strings written + pending */
static Buf pending_len, pending_data;        /* STRINGS not yet flushed */
static uint32_t pending_strings, first_pending = 1;

static uint64_t hash_bytes(const uint8_t *p, size_t n)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ULL;
	return h;
}

static void str_grow(void)
{
	size_t cap = str_cap ? str_cap * 2 : 4096;
	StrSlot *t = calloc(cap, sizeof *t);
	if (!t)
		abort();
	for (size_t i = 0; i < str_cap; i++) {
		if (!str_table[i].index)
			continue;
		size_t j = str_table[i].hash & (cap - 1);
		while (t[j].index)
			j = (j + 1) & (cap - 1);
		t[j] = str_table[i];
	}
	free(str_table);
	str_table = t;
	str_cap = cap;
}

static uint32_t intern_len(const char *s, size_t n)
{
	if (!n)
		return 0;
	if ((str_count + 1) * 2 > str_cap)
		str_grow();
	uint64_t h = hash_bytes((const uint8_t *)s, n);
	size_t j = h & (str_cap - 1);
	for (; str_table[j].index; j = (j + 1) & (str_cap - 1)) {
		StrSlot *e = &str_table[j];
		if (e->hash == h && e->length == n && !memcmp(arena.p + e->offset, s, n))
			return e->index;
	}
	StrSlot *e = &str_table[j];
	e->hash = h;
	e->offset = (uint32_t)arena.len;
	e->length = (uint32_t)n;
	e->index = (uint32_t)++str_count;
	buf_put(&arena, s, n);
	put_u32(&pending_len, (uint32_t)n);
	buf_put(&pending_data, s, n);
	pending_strings++;
	return e->index;
}
static uint32_t intern(const char *s) { return s ? intern_len(s, strlen(s)) : 0; }

/* ---- types ---- */
static Buf pending_type_name, pending_type_kind;
static uint32_t pending_types, types_written;

static Buf chunk; /* the payload being assembled */

/* STRINGS and TYPES payloads: the first index, then two columns; the columns are emptied. */
static void write_table(uint16_t kind, uint64_t first, uint32_t count, Buf *a, Buf *b)
{
	chunk.len = 0;
	put_u64(&chunk, first);
	buf_put(&chunk, a->p, a->len);
	buf_put(&chunk, b->p, b->len);
	write_chunk(kind, count, &chunk);
	a->len = b->len = 0;
}

static void flush_strings_and_types(void)
{
	if (pending_strings) {
		write_table(K_STRINGS, first_pending, pending_strings, &pending_len, &pending_data);
		totals[T_STRINGS] += pending_strings;
		first_pending += pending_strings;
		pending_strings = 0;
	}
	if (pending_types) {
		write_table(K_TYPES, types_written, pending_types, &pending_type_name, &pending_type_kind);
		totals[T_TYPES] += pending_types;
		types_written += pending_types;
		pending_types = 0;
	}
}

/* ---- per-class information: type index, how references are named ---- */
typedef struct {
	uint32_t offset, name; /* field offset in the object, interned field name */
} FieldName;

typedef struct ClassInfo {
	MonoClass *klass;
	uint32_t type;
	int rank;         /* arrays: element edges */
	int is_string;
	uint32_t element_size;
	FieldName *fields; /* reference-holding and value-type instance fields, by offset, this class and its parents */
	uint32_t nfields;
	uint32_t statics_name; /* "Namespace.Class" for static roots */
	struct ClassInfo *next;
} ClassInfo;

#define CLASS_BUCKETS 8192
static ClassInfo *classes[CLASS_BUCKETS];

static int by_offset(const void *a, const void *b)
{
	uint32_t x = ((const FieldName *)a)->offset, y = ((const FieldName *)b)->offset;
	return x < y ? -1 : x > y;
}

/* C# keywords Mono's IL-style names use, and the .NET names people search for. */
static const char *const aliases[][2] = {
	{"string", "System.String"}, {"object", "System.Object"}, {"int", "System.Int32"}, {"uint", "System.UInt32"},
	{"long", "System.Int64"}, {"ulong", "System.UInt64"}, {"short", "System.Int16"}, {"ushort", "System.UInt16"},
	{"byte", "System.Byte"}, {"sbyte", "System.SByte"}, {"char", "System.Char"}, {"bool", "System.Boolean"},
	{"single", "System.Single"}, {"float", "System.Single"}, {"double", "System.Double"},
	{"intptr", "System.IntPtr"}, {"uintptr", "System.UIntPtr"}, {"void", "System.Void"},
	{"decimal", "System.Decimal"}, {"typedref", "System.TypedReference"}, {"int16", "System.Int16"},
	{"uint16", "System.UInt16"}, {"int8", "System.SByte"}, {"uint8", "System.Byte"},
};

/* Append the word p..q without the arity of a generic name ("List`1" -> "List"): its arguments
 * follow in angle brackets, and Mono's log profiler names classes so too. */
static void put_word(Buf *b, const char *p, const char *q)
{
	while (p < q) {
		if (*p == '`') {
			for (p++; p < q && *p >= '0' && *p <= '9'; p++)
				;
			continue;
		}
		put_u8(b, (uint8_t)*p++);
	}
}

static int name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
	       c == '`' || (unsigned char)c >= 0x80;
}

/* The class's .NET name: namespace, nesting with '+', generic arguments, array ranks; e.g.
 * "System.Collections.Generic.Dictionary<System.String, LeakDemo.Request>", "System.Int32[]".
 * Mono's mono_type_full_name gives the structure; keywords become .NET names. Caller frees. */
static char *class_name(MonoClass *klass)
{
	char *il = mono_type_full_name(mono_class_get_type(klass));
	Buf b = {0};
	for (const char *p = il; *p;) {
		if (name_char(*p)) {
			const char *q = p;
			while (name_char(*q))
				q++;
			const char *word = NULL;
			for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
				if (strlen(aliases[i][0]) == (size_t)(q - p) && !memcmp(p, aliases[i][0], (size_t)(q - p)))
					word = aliases[i][1];
			if (word)
				buf_put(&b, word, strlen(word));
			else
				put_word(&b, p, q);
			p = q;
		} else {
			put_u8(&b, *p == '/' ? '+' : (uint8_t)*p);
			p++;
		}
	}
	put_u8(&b, 0);
	mono_free(il);
	return (char *)b.p;
}

static uint32_t add_type(uint32_t name, const char *kind)
{
	put_u32(&pending_type_name, name);
	put_u32(&pending_type_kind, intern(kind));
	pending_types++;
	return types_written + pending_types - 1;
}

static ClassInfo *class_info(MonoClass *klass)
{
	size_t b = ((uintptr_t)klass >> 4) & (CLASS_BUCKETS - 1);
	for (ClassInfo *c = classes[b]; c; c = c->next)
		if (c->klass == klass)
			return c;
	ClassInfo *c = calloc(1, sizeof *c);
	c->klass = klass;
	c->rank = mono_class_get_rank(klass);
	c->is_string = klass == mono_get_string_class();
	const char *kind = "object";
	if (c->is_string)
		kind = "string";
	else if (c->rank)
		kind = "array";
	else if (mono_class_is_valuetype(klass))
		kind = "boxed"; /* a boxed value type: its class is the value type's */
	else if (mono_class_is_delegate(klass))
		kind = "delegate";
	char *name = class_name(klass);
	uint32_t name_index = intern(name);
	c->statics_name = name_index;
	c->type = add_type(name_index, kind);
	free(name);
	if (c->rank) {
		c->element_size = (uint32_t)mono_array_element_size(klass);
	} else {
		size_t cap = 0;
		for (MonoClass *k = klass; k; k = mono_class_get_parent(k)) {
			void *iter = NULL;
			MonoClassField *f;
			while ((f = mono_class_get_fields(k, &iter))) {
				if (mono_field_get_flags(f) & 0x10 /* FIELD_ATTRIBUTE_STATIC */)
					continue;
				if (c->nfields == cap) {
					cap = cap ? cap * 2 : 8;
					c->fields = realloc(c->fields, cap * sizeof *c->fields);
				}
				c->fields[c->nfields].offset = mono_field_get_offset(f);
				c->fields[c->nfields].name = intern(mono_field_get_name(f));
				c->nfields++;
			}
		}
		qsort(c->fields, c->nfields, sizeof *c->fields, by_offset);
	}
	c->next = classes[b];
	classes[b] = c;
	return c;
}

/* The field holding offset `off`: the last field starting at or before it (a reference inside an
 * embedded struct is named by the struct field). */
static uint32_t field_at(const ClassInfo *c, uint32_t off)
{
	uint32_t lo = 0, hi = c->nfields;
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		if (c->fields[mid].offset <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? c->fields[lo - 1].name : 0;
}

/* ---- OBJECTS chunk columns ---- */
static int64_t *col_id, *col_target;
static uint64_t *col_size;
static uint32_t *col_type, *col_count, *col_name;
static uint8_t *col_kind;
static size_t n_obj, n_ref, ref_cap;
static int64_t *name_id;
static uint32_t *name_str;
static size_t n_names;
static uint64_t large_bytes, heap_bytes;
static MonoObject *last_obj;

static void flush_objects(void)
{
	if (!n_obj)
		return;
	flush_strings_and_types();
	chunk.len = 0;
	put_u32(&chunk, 0);
	put_u32(&chunk, 0);
	put_u64(&chunk, n_ref);
	buf_put(&chunk, col_id, 8 * n_obj);
	buf_put(&chunk, col_size, 8 * n_obj);
	buf_put(&chunk, col_target, 8 * n_ref);
	buf_put(&chunk, col_type, 4 * n_obj);
	buf_put(&chunk, col_count, 4 * n_obj);
	buf_put(&chunk, col_name, 4 * n_ref);
	buf_put(&chunk, col_kind, n_ref);
	write_chunk(K_OBJECTS, (uint32_t)n_obj, &chunk);
	totals[T_OBJECTS] += n_obj;
	totals[T_REFS] += n_ref;
	n_obj = n_ref = 0;
}

static void flush_names(void)
{
	if (!n_names)
		return;
	flush_strings_and_types();
	chunk.len = 0;
	buf_put(&chunk, name_id, 8 * n_names);
	buf_put(&chunk, name_str, 4 * n_names);
	write_chunk(K_NAMES, (uint32_t)n_names, &chunk);
	totals[T_NAMES] += n_names;
	n_names = 0;
}

static void refs_reserve(size_t more)
{
	if (n_ref + more <= ref_cap)
		return;
	/* Only an object with more references than a chunk holds gets here (a huge array): the chunk
	 * grows to hold it, since an object's references stay in its own chunk. */
	while (ref_cap < n_ref + more)
		ref_cap *= 2;
	col_target = realloc(col_target, 8 * ref_cap);
	col_name = realloc(col_name, 4 * ref_cap);
	col_kind = realloc(col_kind, ref_cap);
	if (!col_target || !col_name || !col_kind)
		abort();
}

/* UTF-16 to UTF-8, lone surrogates kept as 3-byte sequences (WTF-8, as docs/format.md allows). */
static size_t utf16_to_utf8(const mono_unichar2 *s, size_t n, char *out, size_t room)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t c = s[i];
		if (c >= 0xD800 && c < 0xDC00 && i + 1 < n && s[i + 1] >= 0xDC00 && s[i + 1] < 0xE000) {
			c = 0x10000 + ((c - 0xD800) << 10) + (s[i + 1] - 0xDC00);
			i++;
		}
		char tmp[4];
		size_t k;
		if (c < 0x80) {
			tmp[0] = (char)c;
			k = 1;
		} else if (c < 0x800) {
			tmp[0] = (char)(0xC0 | c >> 6);
			tmp[1] = (char)(0x80 | (c & 0x3F));
			k = 2;
		} else if (c < 0x10000) {
			tmp[0] = (char)(0xE0 | c >> 12);
			tmp[1] = (char)(0x80 | ((c >> 6) & 0x3F));
			tmp[2] = (char)(0x80 | (c & 0x3F));
			k = 3;
		} else {
			tmp[0] = (char)(0xF0 | c >> 18);
			tmp[1] = (char)(0x80 | ((c >> 12) & 0x3F));
			tmp[2] = (char)(0x80 | ((c >> 6) & 0x3F));
			tmp[3] = (char)(0x80 | (c & 0x3F));
			k = 4;
		}
		if (o + k > room)
			break;
		memcpy(out + o, tmp, k);
		o += k;
	}
	return o;
}

static char *name_buffer;

static void add_name(MonoObject *obj)
{
	MonoString *s = (MonoString *)obj;
	size_t len = (size_t)mono_string_length(s);
	if (!len)
		return;
	size_t n = utf16_to_utf8(mono_string_chars(s), len, name_buffer, opt_names);
	if (n_names == MAX_NAMES)
		flush_names();
	name_id[n_names] = (int64_t)(intptr_t)obj;
	name_str[n_names] = intern_len(name_buffer, n);
	n_names++;
}

/* ---- roots ---- */
typedef struct {
	uintptr_t start, size;
	int source;
	const void *key;
	char *name;
	int thread; /* stacks: 1 for the first thread registered, 2 for the next... */
} RootRange;
static int threads_registered;
static pthread_mutex_t roots_lock = PTHREAD_MUTEX_INITIALIZER;
static RootRange *ranges;
static size_t n_ranges, ranges_cap;

typedef struct {
	uintptr_t slot;
	MonoObject *obj;
	int seen; /* the walk visited the target: only those are written (no dangling ids) */
	int weak; /* from a weak GC handle (Mono does not report those as roots; see weak_handles) */
} Root;
static Root *roots;
static size_t n_roots, roots_cap;
static size_t roots_dropped;
static uint64_t report_by_source[16], report_unregistered;

static void on_root_register(MonoProfiler *p, const mono_byte *start, uintptr_t size, MonoGCRootSource source,
			     const void *key, const char *name)
{
	pthread_mutex_lock(&roots_lock);
	if (n_ranges == ranges_cap) {
		ranges_cap = ranges_cap ? ranges_cap * 2 : 256;
		ranges = realloc(ranges, ranges_cap * sizeof *ranges);
	}
	int thread = source == MONO_ROOT_SOURCE_STACK ? ++threads_registered : 0;
	ranges[n_ranges++] = (RootRange){(uintptr_t)start, size, source, key, name ? strdup(name) : NULL, thread};
	pthread_mutex_unlock(&roots_lock);
}

static void on_root_unregister(MonoProfiler *p, const mono_byte *start)
{
	pthread_mutex_lock(&roots_lock);
	for (size_t i = n_ranges; i-- > 0;) {
		if (ranges[i].start == (uintptr_t)start) {
			free(ranges[i].name);
			ranges[i] = ranges[--n_ranges];
			break;
		}
	}
	pthread_mutex_unlock(&roots_lock);
}

static const RootRange *range_of(uintptr_t slot)
{
	const RootRange *best = NULL;
	for (size_t i = 0; i < n_ranges; i++)
		if (slot >= ranges[i].start && slot < ranges[i].start + ranges[i].size)
			if (!best || ranges[i].size < best->size)
				best = &ranges[i];
	return best;
}

static void on_gc_roots(MonoProfiler *p, uint64_t count, const mono_byte *const *addresses, MonoObject *const *objects)
{
	if (!active)
		return;
	for (uint64_t i = 0; i < count; i++) {
		if (!objects[i])
			continue;
		if (n_roots == roots_cap) {
			roots_cap = roots_cap ? roots_cap * 2 : 4096;
			roots = realloc(roots, roots_cap * sizeof *roots);
		}
		roots[n_roots++] = (Root){(uintptr_t)addresses[i], objects[i], 0, 0};
	}
}

/* Objects moved during the capture's collection (the nursery's survivors): old -> new. */
static uintptr_t *moves;
static size_t n_moves, moves_cap;

static void on_gc_moves(MonoProfiler *p, MonoObject *const *objects, uint64_t count)
{
	if (!active)
		return;
	for (uint64_t i = 0; i + 1 < count; i += 2) {
		if (n_moves + 2 > moves_cap) {
			moves_cap = moves_cap ? moves_cap * 2 : 4096;
			moves = realloc(moves, moves_cap * sizeof *moves);
		}
		moves[n_moves++] = (uintptr_t)objects[i];
		moves[n_moves++] = (uintptr_t)objects[i + 1];
	}
}

static int by_obj(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)((const Root *)a)->obj, y = (uintptr_t)((const Root *)b)->obj;
	return x < y ? -1 : x > y;
}

static Root *find_root(MonoObject *obj)
{
	size_t lo = 0, hi = n_roots;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if ((uintptr_t)roots[mid].obj < (uintptr_t)obj)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n_roots && roots[lo].obj == obj ? &roots[lo] : NULL;
}

static const char *source_kind(int source)
{
	switch (source) {
	case MONO_ROOT_SOURCE_EXTERNAL: return "external";
	case MONO_ROOT_SOURCE_STACK: return "stack";
	case MONO_ROOT_SOURCE_FINALIZER_QUEUE: return "finalizer queue";
	case MONO_ROOT_SOURCE_STATIC: return "static";
	case MONO_ROOT_SOURCE_THREAD_STATIC: return "thread static";
	case MONO_ROOT_SOURCE_CONTEXT_STATIC: return "context static";
	case MONO_ROOT_SOURCE_GC_HANDLE: return "handle";
	case MONO_ROOT_SOURCE_JIT: return "jit";
	case MONO_ROOT_SOURCE_THREADING: return "threading";
	case MONO_ROOT_SOURCE_DOMAIN: return "domain";
	case MONO_ROOT_SOURCE_REFLECTION: return "reflection";
	case MONO_ROOT_SOURCE_MARSHAL: return "marshal";
	case MONO_ROOT_SOURCE_THREAD_POOL: return "thread pool";
	case MONO_ROOT_SOURCE_DEBUGGER: return "debugger";
	case MONO_ROOT_SOURCE_HANDLE: return "runtime handle";
	default: return "other";
	}
}

/* A static root's name: "Namespace.Class.field" when the slot lies in a class's static data. */
static uint32_t static_name(const RootRange *r, uintptr_t slot)
{
	MonoVTable *vt = (MonoVTable *)r->key;
	if (!vt)
		return intern(r->name);
	MonoClass *klass = mono_vtable_class(vt);
	uintptr_t base = (uintptr_t)mono_vtable_get_static_field_data(vt);
	if (!klass || !base)
		return intern(r->name);
	void *iter = NULL;
	MonoClassField *f;
	while ((f = mono_class_get_fields(klass, &iter))) {
		/* static (0x10), not a literal const (0x40), which has no storage */
		if ((mono_field_get_flags(f) & 0x50) == 0x10 && base + mono_field_get_offset(f) == slot) {
			char *cls = class_name(klass);
			char buf[1024];
			snprintf(buf, sizeof buf, "%s.%s", cls, mono_field_get_name(f));
			free(cls);
			return intern(buf);
		}
	}
	return intern(r->name);
}

/* Weak GC handles: sgen does not report them as roots (they do not keep objects alive), so the
 * module tracks them (gc_handle_created/deleted) and reads their targets before the capture's
 * collection, to write them as roots of kind "weak handle", which heapdb reads as weak edges. */
static pthread_mutex_t handles_lock = PTHREAD_MUTEX_INITIALIZER;
/* The live weak handles: an open-addressing set of handle values (never 0), with tombstones. */
#define NO_HANDLE 0u
#define GONE_HANDLE 0xFFFFFFFFu
static uint32_t *weak_handles;
static size_t weak_handles_cap, weak_handles_used; /* used: live and tombstones */
static MonoObject **weak_targets;                  /* read for the capture in progress */
static size_t n_weak_targets;

static size_t handle_slot(uint32_t h, size_t cap) { return (h * 2654435761u) & (cap - 1); }

static void weak_handles_grow(void)
{
	size_t cap = weak_handles_cap ? weak_handles_cap * 2 : 1024, live = 0;
	uint32_t *t = calloc(cap, sizeof *t);
	if (!t)
		abort();
	for (size_t i = 0; i < weak_handles_cap; i++) {
		uint32_t h = weak_handles[i];
		if (h == NO_HANDLE || h == GONE_HANDLE)
			continue;
		size_t j = handle_slot(h, cap);
		while (t[j] != NO_HANDLE)
			j = (j + 1) & (cap - 1);
		t[j] = h;
		live++;
	}
	free(weak_handles);
	weak_handles = t;
	weak_handles_cap = cap;
	weak_handles_used = live;
}

static int is_weak(MonoGCHandleType type)
{
	return type == MONO_GC_HANDLE_WEAK || type == MONO_GC_HANDLE_WEAK_TRACK_RESURRECTION;
}

static void on_handle_created(MonoProfiler *p, uint32_t h, MonoGCHandleType type, MonoObject *obj)
{
	if (!is_weak(type) || h == NO_HANDLE || h == GONE_HANDLE)
		return;
	pthread_mutex_lock(&handles_lock);
	if ((weak_handles_used + 1) * 2 > weak_handles_cap)
		weak_handles_grow();
	size_t j = handle_slot(h, weak_handles_cap);
	while (weak_handles[j] != NO_HANDLE && weak_handles[j] != GONE_HANDLE && weak_handles[j] != h)
		j = (j + 1) & (weak_handles_cap - 1);
	if (weak_handles[j] == NO_HANDLE)
		weak_handles_used++;
	weak_handles[j] = h;
	pthread_mutex_unlock(&handles_lock);
}

static void on_handle_deleted(MonoProfiler *p, uint32_t h, MonoGCHandleType type)
{
	if (!is_weak(type) || !weak_handles_cap)
		return;
	pthread_mutex_lock(&handles_lock);
	for (size_t j = handle_slot(h, weak_handles_cap); weak_handles[j] != NO_HANDLE; j = (j + 1) & (weak_handles_cap - 1))
		if (weak_handles[j] == h) {
			weak_handles[j] = GONE_HANDLE;
			break;
		}
	pthread_mutex_unlock(&handles_lock);
}

/* Outside any collection, after the first one: targets do not move again before the walk (if
 * sgen compacts, gc_moves says so and the roots follow). */
static void read_weak_targets(void)
{
	pthread_mutex_lock(&handles_lock);
	weak_targets = realloc(weak_targets, (weak_handles_cap + 1) * sizeof *weak_targets);
	n_weak_targets = 0;
	for (size_t i = 0; i < weak_handles_cap; i++) {
		if (weak_handles[i] == NO_HANDLE || weak_handles[i] == GONE_HANDLE)
			continue;
		MonoObject *o = mono_gchandle_get_target(weak_handles[i]);
		if (o)
			weak_targets[n_weak_targets++] = o;
	}
	pthread_mutex_unlock(&handles_lock);
}

/* Root kinds in the order they are written: heapdb takes the first root kind that reaches an
 * object as its path, so a static field or a handle names a leak before a stack slot does. */
static const char *const kind_order[] = {"static", "thread static", "context static", "strong handle",
					 "pinned handle", "handle", "stack", "threading", "thread pool",
					 "domain", "reflection", "marshal", "jit", "external", "debugger",
					 "runtime handle", "unregistered", "weak handle", "finalizer queue"};

static int kind_rank(const char *k)
{
	for (size_t i = 0; i < sizeof kind_order / sizeof kind_order[0]; i++)
		if (!strcmp(k, kind_order[i]))
			return (int)i;
	return (int)(sizeof kind_order / sizeof kind_order[0]);
}

typedef struct {
	int64_t target;
	uint32_t kind, name;
	int rank;
	size_t order;
} RootOut;

static int by_rank(const void *a, const void *b)
{
	const RootOut *x = a, *y = b;
	if (x->rank != y->rank)
		return x->rank - y->rank;
	return x->order < y->order ? -1 : x->order > y->order;
}

static const char *handle_kind(const char *bucket)
{
	/* sgen names its handle tables "GC Handle Bucket (SGen, Normal)" and "(SGen, Pinned)" */
	if (bucket && strstr(bucket, "Pinned"))
		return "pinned handle";
	if (bucket && strstr(bucket, "Normal"))
		return "strong handle";
	if (bucket && strstr(bucket, "Weak"))
		return "weak handle";
	return "handle";
}

static void write_roots(void)
{
	RootOut *out = malloc((n_roots + 1) * sizeof *out);
	size_t count = 0;
	for (size_t i = 0; i < n_roots; i++) {
		if (!roots[i].seen) {
			roots_dropped++;
			continue;
		}
		const char *k;
		uint32_t nm = 0;
		char buf[64];
		const RootRange *r = roots[i].weak ? NULL : range_of(roots[i].slot);
		if (roots[i].weak) {
			k = "weak handle";
			nm = intern("GCHandle (Weak)");
		} else if (r) {
			report_by_source[r->source & 15]++;
			k = source_kind(r->source);
			if (r->source == MONO_ROOT_SOURCE_STATIC)
				nm = static_name(r, roots[i].slot);
			else if (r->source == MONO_ROOT_SOURCE_STACK) {
				snprintf(buf, sizeof buf, "thread %d", r->thread);
				nm = intern(buf);
			} else {
				if (r->source == MONO_ROOT_SOURCE_GC_HANDLE)
					k = handle_kind(r->name);
				nm = intern(r->name);
			}
		} else {
			/* A slot in no registered range: Mono 6.8 reports none (checked with the debug option),
			 * but a later runtime could. */
			report_unregistered++;
			k = "unregistered";
		}
		out[count] = (RootOut){(int64_t)(intptr_t)roots[i].obj, intern(k), nm, kind_rank(k), i};
		count++;
	}
	qsort(out, count, sizeof *out, by_rank);
	for (size_t at = 0; at < count; at += MAX_NAMES) {
		size_t n = count - at < MAX_NAMES ? count - at : MAX_NAMES;
		flush_strings_and_types();
		chunk.len = 0;
		for (size_t i = at; i < at + n; i++)
			put_u64(&chunk, (uint64_t)out[i].target);
		for (size_t i = at; i < at + n; i++)
			put_u32(&chunk, out[i].kind);
		for (size_t i = at; i < at + n; i++)
			put_u32(&chunk, out[i].name);
		write_chunk(K_ROOTS, (uint32_t)n, &chunk);
		totals[T_ROOTS] += n;
	}
	free(out);
}

/* ---- the walk ---- */
static int on_object(MonoObject *obj, MonoClass *klass, uintptr_t size, uintptr_t num, MonoObject **refs,
		     uintptr_t *offsets, void *data)
{
	ClassInfo *c = class_info(klass);
	int continued = size == 0 && obj == last_obj; /* sgen reports many references in batches */
	if (!continued) {
		if (n_obj == MAX_OBJECTS || n_ref + 4096 > MAX_REFS)
			flush_objects();
		size = (size + 7) & ~(uintptr_t)7; /* objects are 8-byte aligned in sgen's heap */
		col_id[n_obj] = (int64_t)(intptr_t)obj;
		col_size[n_obj] = size;
		col_type[n_obj] = c->type;
		col_count[n_obj] = 0;
		n_obj++;
		heap_bytes += size;
		if (size > LARGE_OBJECT)
			large_bytes += size;
		last_obj = obj;
		Root *r = n_roots ? find_root(obj) : NULL;
		for (; r && r < roots + n_roots && r->obj == obj; r++)
			r->seen = 1;
		if (c->is_string && opt_names)
			add_name(obj);
	}
	refs_reserve(num);
	uintptr_t data_offset = 0;
	if (c->rank)
		data_offset = (uintptr_t)mono_array_addr_with_size((MonoArray *)obj, 1, 0) - (uintptr_t)obj;
	for (uintptr_t i = 0; i < num; i++) {
		if (!refs[i])
			continue;
		col_target[n_ref] = (int64_t)(intptr_t)refs[i];
		if (c->rank && c->element_size) {
			col_kind[n_ref] = E_ELEMENT;
			col_name[n_ref] = (uint32_t)((offsets[i] - data_offset) / c->element_size);
		} else {
			uint32_t nm = field_at(c, (uint32_t)offsets[i]);
			col_kind[n_ref] = nm ? E_PROPERTY : E_INTERNAL;
			col_name[n_ref] = nm;
		}
		n_ref++;
		col_count[n_obj - 1]++;
	}
	return 0;
}

/* ---- metadata ---- */
static void meta_key(Buf *b, const char *k)
{
	put_u32(b, (uint32_t)strlen(k));
	buf_put(b, k, strlen(k));
}
static void meta_int(Buf *b, const char *k, int64_t v)
{
	meta_key(b, k);
	put_u8(b, 1);
	put_u64(b, (uint64_t)v);
}
static void meta_str(Buf *b, const char *k, const char *v)
{
	meta_key(b, k);
	put_u8(b, 3);
	put_u32(b, (uint32_t)strlen(v));
	buf_put(b, v, strlen(v));
}

/* Taken outside the collection: these calls take the GC lock, which the walk holds. */
static int64_t heap_size, used_size, gc_minor, gc_major;
static char *runtime_version;

static void write_metadata(void)
{
	char when[32];
	time_t now = time(NULL);
	strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	chunk.len = 0;
	meta_str(&chunk, "runtime", "dotnet");
	meta_str(&chunk, "runtime_implementation", "mono");
	meta_str(&chunk, "runtime_version", runtime_version ? runtime_version : "");
	meta_str(&chunk, "capture_time", when);
	meta_str(&chunk, "producer", "heapdb mono profiler");
	meta_int(&chunk, "total_heap_bytes", heap_size);
	meta_int(&chunk, "used_heap_bytes", used_size);
	meta_int(&chunk, "walked_bytes", (int64_t)heap_bytes);
	meta_int(&chunk, "large_object_heap_bytes", (int64_t)large_bytes);
	meta_int(&chunk, "gc_count", gc_minor + gc_major);
	meta_int(&chunk, "gc_count_minor", gc_minor);
	meta_int(&chunk, "gc_count_major", gc_major);
	meta_int(&chunk, "pid", getpid());
	meta_int(&chunk, "pointer_size", (int64_t)sizeof(void *));
	meta_int(&chunk, "roots_without_object", (int64_t)roots_dropped);
	write_chunk(K_METADATA, 15, &chunk);
}

static void write_trailer(void)
{
	chunk.len = 0;
	uint64_t chunks = totals[T_CHUNKS];
	put_u64(&chunk, chunks);
	for (int i = T_STRINGS; i <= T_NAMES; i++)
		put_u64(&chunk, totals[i]);
	write_chunk(K_TRAILER, 0, &chunk);
}

/* ---- opening the output ---- */
static char *expand_path(const char *tmpl)
{
	Buf b = {0};
	char num[32];
	for (const char *p = tmpl; *p; p++) {
		if (p[0] == '%' && p[1] == 'p') {
			snprintf(num, sizeof num, "%d", (int)getpid());
			buf_put(&b, num, strlen(num));
			p++;
		} else if (p[0] == '%' && p[1] == 'n') {
			snprintf(num, sizeof num, "%d", capture_number);
			buf_put(&b, num, strlen(num));
			p++;
		} else if (p[0] == '%' && p[1] == '%') {
			put_u8(&b, '%');
			p++;
		} else
			put_u8(&b, (uint8_t)*p);
	}
	put_u8(&b, 0);
	return (char *)b.p;
}

static int open_output(const char *where)
{
	if (!strncmp(where, "tcp:", 4)) {
		char *host = strdup(where + 4), *port = strrchr(host, ':');
		int fd = -1;
		if (port) {
			*port++ = 0;
			struct addrinfo hints = {0}, *res, *ai;
			hints.ai_socktype = SOCK_STREAM;
			if (!getaddrinfo(host, port, &hints, &res)) {
				for (ai = res; ai && fd < 0; ai = ai->ai_next) {
					fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
					if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
						close(fd);
						fd = -1;
					}
				}
				freeaddrinfo(res);
			}
		}
		free(host);
		return fd;
	}
	return open(where, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
}

/* ---- one capture, inside the collection ---- */
static void capture_begin(void)
{
	memset(totals, 0, sizeof totals);
	heap_bytes = large_bytes = 0;
	n_obj = n_ref = n_names = n_roots = n_moves = roots_dropped = 0;
	report_unregistered = 0;
	memset(report_by_source, 0, sizeof report_by_source);
	last_obj = NULL;
	/* Each file has its own string and type tables. */
	for (size_t i = 0; i < CLASS_BUCKETS; i++) {
		ClassInfo *c = classes[i];
		while (c) {
			ClassInfo *next = c->next;
			free(c->fields);
			free(c);
			c = next;
		}
		classes[i] = NULL;
	}
	memset(str_table, 0, str_cap * sizeof *str_table);
	str_count = 0;
	arena.len = pending_len.len = pending_data.len = 0;
	pending_strings = 0;
	first_pending = 1;
	pending_types = types_written = 0;
	pending_type_name.len = pending_type_kind.len = 0;
}

static void capture_walk(void)
{
	static const uint8_t header_magic[8] = {0x89, 'S', 'N', 'A', 'P', 'B', 'I', 'N'};
	uint8_t header[16];
	uint16_t major = 1, minor = 0;
	memcpy(header, header_magic, 8);
	memcpy(header + 8, &major, 2);
	memcpy(header + 10, &minor, 2);
	uint32_t crc = (uint32_t)crc32(0L, header, 12);
	memcpy(header + 12, &crc, 4);
	out_write(header, 16);

	for (size_t i = 0; i < n_weak_targets; i++) {
		if (n_roots == roots_cap) {
			roots_cap = roots_cap ? roots_cap * 2 : 4096;
			roots = realloc(roots, roots_cap * sizeof *roots);
		}
		roots[n_roots++] = (Root){0, weak_targets[i], 0, 1};
	}
	/* Roots seen before objects moved: follow the moves, then sort by object for the walk. */
	if (n_moves) {
		for (size_t i = 0; i < n_roots; i++)
			for (size_t j = 0; j < n_moves; j += 2)
				if ((uintptr_t)roots[i].obj == moves[j]) {
					roots[i].obj = (MonoObject *)moves[j + 1];
					break;
				}
	}
	qsort(roots, n_roots, sizeof *roots, by_obj);
	mono_gc_walk_heap(0, on_object, NULL);
	flush_objects();
	flush_names();
	write_roots();
	flush_strings_and_types();
	write_metadata();
	write_trailer();
}

static void gc_event(MonoProfiler *p, MonoProfilerGCEvent ev, uint32_t generation, mono_bool is_serial)
{
	int major = (int)generation == mono_gc_max_generation();
	switch (ev) {
	case MONO_GC_EVENT_PRE_STOP_WORLD_LOCKED:
		if (capturing == 2 && major && is_serial) {
			active = 1;
			capture_begin();
			/* Only now: with these callbacks set, sgen reports roots and moves at every collection. */
			mono_profiler_set_gc_roots_callback(handle, on_gc_roots);
			mono_profiler_set_gc_moves_callback(handle, on_gc_moves);
		}
		break;
	case MONO_GC_EVENT_PRE_START_WORLD:
		if (active) {
			mono_profiler_set_gc_roots_callback(handle, NULL);
			mono_profiler_set_gc_moves_callback(handle, NULL);
			capture_walk();
			active = 0;
		}
		break;
	case MONO_GC_EVENT_END:
		if (capturing)
			break;
		gc_seen++;
		if (opt_every && gc_seen % opt_every == 0)
			requested = 1;
		break;
	case MONO_GC_EVENT_POST_START_WORLD_UNLOCKED:
		if (requested && !capturing)
			mono_gc_finalize_notify(); /* the finalizer thread takes the capture */
		break;
	default:
		break;
	}
}

/* Runs on an attached thread outside any collection. Returns objects written, or -1. */
static long long capture_now(const char *path)
{
	long long objects = -1;
	pthread_mutex_lock(&capture_lock);
	capture_number++;
	char *where = path ? strdup(path) : expand_path(opt_output);
	out_fd = open_output(where);
	out_failed = 0;
	if (out_fd < 0) {
		fprintf(stderr, "heapdb: cannot open %s: %s\n", where, strerror(errno));
		free(where);
		pthread_mutex_unlock(&capture_lock);
		return -1;
	}
	/* The first full collection empties the nursery; during the second the world is walked. */
	capturing = 1;
	mono_gc_collect(mono_gc_max_generation());
	read_weak_targets();
	heap_size = mono_gc_get_heap_size();
	used_size = mono_gc_get_used_size();
	/* counts as they will be once the capture's own collection is done */
	gc_minor = mono_gc_collection_count(0);
	gc_major = mono_gc_collection_count(mono_gc_max_generation()) + 1;
	capturing = 2;
	mono_gc_collect(mono_gc_max_generation());
	capturing = 0;
	if (close(out_fd) < 0)
		out_failed = 1;
	out_fd = -1;
	if (!out_failed && totals[T_CHUNKS])
		objects = (long long)totals[T_OBJECTS];
	if (opt_debug) {
		fprintf(stderr, "heapdb: %s: %llu objects, %llu references, %llu roots (%zu without object), %llu names\n",
			where, (unsigned long long)totals[T_OBJECTS], (unsigned long long)totals[T_REFS],
			(unsigned long long)totals[T_ROOTS], roots_dropped, (unsigned long long)totals[T_NAMES]);
		for (int i = 0; i < 16; i++)
			if (report_by_source[i])
				fprintf(stderr, "heapdb:   roots from %s: %llu\n", source_kind(i),
					(unsigned long long)report_by_source[i]);
		fprintf(stderr, "heapdb:   roots in no registered range: %llu\n", (unsigned long long)report_unregistered);
	}
	free(where);
	pthread_mutex_unlock(&capture_lock);
	return objects;
}

static void on_finalized(MonoProfiler *p)
{
	if (requested) {
		requested = 0; /* a trigger that comes during this capture asks for another */
		capture_now(NULL);
	}
}

/* Heapdb.Capture(path): the internal call behind Heapdb.dll. */
static int64_t capture_icall(MonoString *path)
{
	char *p = path ? mono_string_to_utf8(path) : NULL;
	long long n = capture_now(p);
	if (p)
		mono_free(p);
	return n;
}

static void runtime_initialized(MonoProfiler *p)
{
	mono_add_internal_call("Heapdb::CaptureNative", (const void *)capture_icall);
	runtime_version = mono_get_runtime_build_info();
}

/* ---- signal trigger ---- */
static int signal_pipe[2] = {-1, -1};

static void on_signal(int sig)
{
	int saved = errno;
	char b = 1;
	(void)!write(signal_pipe[1], &b, 1); /* async-signal-safe; the helper thread does the rest */
	errno = saved;
}

static void *signal_thread(void *arg)
{
	char b;
	for (;;) {
		ssize_t r = read(signal_pipe[0], &b, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return NULL;
		requested = 1;
		mono_gc_finalize_notify();
	}
}

static void start_signal_trigger(void)
{
	pthread_t t;
	if (pipe2(signal_pipe, O_CLOEXEC) < 0)
		return;
	struct sigaction sa = {0};
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(opt_signal, &sa, NULL);
	sigset_t block, old;
	sigfillset(&block);
	pthread_sigmask(SIG_BLOCK, &block, &old); /* the helper never takes a signal itself */
	pthread_create(&t, NULL, signal_thread, NULL);
	pthread_detach(t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* ---- options ---- */
static void usage_error(const char *what)
{
	fprintf(stderr,
		"heapdb: bad profiler option '%s'. Options: output=PATH (%%p pid, %%n capture number, tcp:HOST:PORT), "
		"signal[=USR1|USR2], every=N, names=BYTES, debug\n",
		what);
	exit(2);
}

static void parse_options(const char *desc)
{
	if (!strncmp(desc, "heapdb", 6))
		desc += 6;
	if (*desc == ':')
		desc++;
	char *copy = strdup(desc), *save = NULL;
	for (char *opt = strtok_r(copy, ",", &save); opt; opt = strtok_r(NULL, ",", &save)) {
		char *value = strchr(opt, '=');
		if (value)
			*value++ = 0;
		if (!strcmp(opt, "output") && value && *value)
			opt_output = strdup(value);
		else if (!strcmp(opt, "signal"))
			opt_signal = !value || !strcmp(value, "USR2") || !strcmp(value, "SIGUSR2") ? SIGUSR2
				     : !strcmp(value, "USR1") || !strcmp(value, "SIGUSR1")    ? SIGUSR1
											      : -1;
		else if (!strcmp(opt, "every") && value && atoi(value) > 0)
			opt_every = atoi(value);
		else if (!strcmp(opt, "names") && value)
			opt_names = (size_t)strtoul(value, NULL, 10);
		else if (!strcmp(opt, "debug") && !value)
			opt_debug = 1;
		else
			usage_error(opt);
		if (opt_signal < 0)
			usage_error(value);
	}
	free(copy);
}

MONO_API void mono_profiler_init_heapdb(const char *desc);

void mono_profiler_init_heapdb(const char *desc)
{
	parse_options(desc ? desc : "");
	col_id = malloc(8 * MAX_OBJECTS);
	col_size = malloc(8 * MAX_OBJECTS);
	col_type = malloc(4 * MAX_OBJECTS);
	col_count = malloc(4 * MAX_OBJECTS);
	ref_cap = MAX_REFS;
	col_target = malloc(8 * ref_cap);
	col_name = malloc(4 * ref_cap);
	col_kind = malloc(ref_cap);
	name_id = malloc(8 * MAX_NAMES);
	name_str = malloc(4 * MAX_NAMES);
	name_buffer = malloc(opt_names + 4);
	str_grow();
	handle = mono_profiler_create(&profiler_state);
	mono_profiler_set_runtime_initialized_callback(handle, runtime_initialized);
	mono_profiler_set_gc_event_callback(handle, gc_event);
	mono_profiler_set_gc_root_register_callback(handle, on_root_register);
	mono_profiler_set_gc_root_unregister_callback(handle, on_root_unregister);
	mono_profiler_set_gc_finalized_callback(handle, on_finalized);
	mono_profiler_set_gc_handle_created_callback(handle, on_handle_created);
	mono_profiler_set_gc_handle_deleted_callback(handle, on_handle_deleted);
	if (opt_signal)
		start_signal_trigger();
}
