/* Prints the byte offsets and sizes of the log format's structs that the
 * benchmark driver reads (src/format/sflog.h is the definition), one
 * "name value" pair a line, so the Python side never hard-codes them. */
#include <stddef.h>
#include <stdio.h>

#include "format/sflog.h"

#define P(name, v) printf("%s %zu\n", name, (size_t)(v))

int main(void)
{
	P("header_size", SF_HEADER_SIZE);
	P("slot_size", SF_SLOT_SIZE);
	P("hdr.magic", offsetof(struct sf_header, magic));
	P("hdr.version", offsetof(struct sf_header, version));
	P("hdr.dropped_events", offsetof(struct sf_header, dropped_events));
	P("hdr.threads", offsetof(struct sf_header, threads));
	P("hdr.patch_ns", offsetof(struct sf_header, patch_ns));
	P("hdr.sleds_patched", offsetof(struct sf_header, sleds_patched));
	P("format.version", SF_VERSION);
	P("format.version_no_args", SF_VERSION_NO_ARGS);
	P("sizeof.event", sizeof(struct sf_event));
	P("sizeof.event_ext", sizeof(struct sf_event_ext));
	P("event.word", offsetof(struct sf_event, word));
	P("event.kind_bits", SF_KIND_BITS);
	P("kind.entry", SF_EV_ENTRY);
	P("kind.alloc_first", SF_EV_ALLOC);
	P("kind.alloc_last", SF_EV_REALLOC_DEALLOC);
	P("sizeof.chunk", sizeof(struct sf_chunk));
	P("sizeof.object", sizeof(struct sf_object));
	P("chunk.magic", SF_CHUNK_MAGIC);
	P("chunk.type", offsetof(struct sf_chunk, type));
	P("chunk.size", offsetof(struct sf_chunk, size));
	P("chunk.count", offsetof(struct sf_chunk, count));
	P("chunk.thread_serial", offsetof(struct sf_chunk, thread_serial));
	P("chunk.seq", offsetof(struct sf_chunk, seq));
	P("object.first_id", offsetof(struct sf_object, first_id));
	P("object.path_len", offsetof(struct sf_object, path_len));
	P("type.object", SF_CHUNK_OBJECT);
	P("type.data", SF_CHUNK_DATA);
	P("type.slot", SF_CHUNK_SLOT);
	P("type.packed", SF_CHUNK_PACKED);
	P("chunk.reserved", offsetof(struct sf_chunk, reserved));
	return 0;
}
