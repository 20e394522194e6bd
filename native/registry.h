/* The registry (registry.def) as C: implementation ids and names, receive strategies.
 * Shared code looks implementations up here and knows none of them by name. */
#ifndef COPYLAB_REGISTRY_H
#define COPYLAB_REGISTRY_H

enum impl_id {
	IMPL_NONE = 0,
#define IMPL(name, id, ...) IMPL_ID_##name = id,
#define PEER(...)
#define RECEIVE(...)
#include "registry.def"
#undef IMPL
#undef PEER
#undef RECEIVE
};

enum receive_strategy {
	RECEIVE_NONE = 0,
#define IMPL(...)
#define PEER(...)
#define RECEIVE(name, id, ...) RECEIVE_##name = id,
#include "registry.def"
#undef IMPL
#undef PEER
#undef RECEIVE
};

/* "a1", ... for a wire id; "?" for one the registry does not know */
const char *impl_name(int impl);
/* the wire id of a named implementation; IMPL_NONE if unknown */
int impl_by_name(const char *name);
/* "message", ... ; "?" for an unknown id */
const char *receive_name(int receive);
/* the id of a named receive strategy; RECEIVE_NONE if unknown */
int receive_by_name(const char *name);
/* "message|bulk|...": the names, for usage and error messages */
const char *receive_names(void);

#endif
