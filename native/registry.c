#include "registry.h"

#include <stddef.h>
#include <string.h>

struct named {
	const char *name;
	int id;
};

static const struct named impls[] = {
#define IMPL(name, id, ...) {#name, id},
#define PEER(...)
#define RECEIVE(...)
#include "registry.def"
#undef IMPL
#undef PEER
#undef RECEIVE
};

static const struct named receives[] = {
#define IMPL(...)
#define PEER(...)
#define RECEIVE(name, id, ...) {#name, id},
#include "registry.def"
#undef IMPL
#undef PEER
#undef RECEIVE
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const char *name_of(const struct named *table, size_t n, int id)
{
	for (size_t k = 0; k < n; k++)
		if (table[k].id == id)
			return table[k].name;
	return "?";
}

static int id_of(const struct named *table, size_t n, const char *name)
{
	for (size_t k = 0; k < n; k++)
		if (strcmp(table[k].name, name) == 0)
			return table[k].id;
	return 0;
}

const char *impl_name(int impl)
{
	return name_of(impls, COUNT(impls), impl);
}

int impl_by_name(const char *name)
{
	return id_of(impls, COUNT(impls), name);
}

const char *receive_name(int receive)
{
	return name_of(receives, COUNT(receives), receive);
}

int receive_by_name(const char *name)
{
	return id_of(receives, COUNT(receives), name);
}

const char *receive_names(void)
{
	static char names[128];

	if (!names[0]) {
		for (size_t k = 0; k < COUNT(receives); k++) {
			if (k)
				strncat(names, "|", sizeof(names) - strlen(names) - 1);
			strncat(names, receives[k].name, sizeof(names) - strlen(names) - 1);
		}
	}
	return names;
}
