/* Wire protocol between client and servers: handshake, throughput STOP, latency requests.
 *
 * Every connection starts with the client's hello announcing what it expects; the server
 * answers with a reply carrying its verdict, its implementation id and its own settings, so a
 * refusal can say on both sides exactly what did not match. All integers are big-endian.
 */
#ifndef COPYLAB_PROTOCOL_H
#define COPYLAB_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>

#define PROTO_MAGIC 0x434c4142u /* "CLAB" */
#define PROTO_VERSION 1

#define HELLO_SIZE 16 /* magic u32, version u16, mode u16, msg_size u64 */
#define REPLY_SIZE 24 /* magic u32, status u16, impl u16, mode u16, version u16, limit u32, msg_size u64 */

/* Throughput mode: the client ends the stream with this single byte. The server looks for it at the
 * latest after STOP_CHECK_BYTES sent (or one message, if larger), so after STOP the client drains at
 * most that, one message in progress and what the two sockets' buffers hold. */
#define STOP_BYTE 'S'
#define STOP_CHECK_BYTES (256u * 1024)
/* A copylab peer answers each handshake step at once: the whole step (not each recv) must end
 * within this, so a peer trickling a byte at a time cannot stretch it. */
#define HANDSHAKE_TIMEOUT_S 5.0
/* Latency mode: each request is an 8-byte sequence number; this value ends the connection. */
#define REQUEST_SIZE 8
#define STOP_REQUEST UINT64_MAX

enum mode { MODE_THROUGHPUT = 1, MODE_LATENCY = 2 };

enum hello_status {
	STATUS_OK = 0,
	STATUS_MODE_MISMATCH = 1,
	STATUS_SIZE_MISMATCH = 2,
	STATUS_BAD_HELLO = 3, /* wrong magic or version: not our client */
	STATUS_SERVER_ERROR = 4, /* the server could not set the connection up (its stderr says why) */
	STATUS_BUSY = 5, /* the server already serves as many connections as it takes (reply.limit) */
};

struct hello {
	uint32_t magic;
	uint16_t version;
	uint16_t mode;
	uint64_t msg_size;
};

struct reply {
	uint32_t magic;
	uint16_t status;
	uint16_t impl;     /* the server's wire id in the registry (registry.def) */
	uint16_t mode;     /* the server's --mode */
	uint16_t version;
	uint32_t limit;    /* STATUS_BUSY: the most connections the server serves at once; else 0 */
	uint64_t msg_size; /* the server's --msg-size */
};

void hello_encode(const struct hello *h, unsigned char out[HELLO_SIZE]);
void hello_decode(const unsigned char in[HELLO_SIZE], struct hello *h);
void reply_encode(const struct reply *r, unsigned char out[REPLY_SIZE]);
void reply_decode(const unsigned char in[REPLY_SIZE], struct reply *r);

void put_be64(unsigned char *p, uint64_t v);
uint64_t get_be64(const unsigned char *p);

/* "throughput", "latency" or "?" */
const char *mode_name(int mode);
/* Why a server refused, as a phrase ("the server's --mode is latency, the client asked for throughput"). */
void describe_refusal(const struct hello *asked, const struct reply *r, char *buf, size_t len);

#endif
