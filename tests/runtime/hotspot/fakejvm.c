// SPDX-License-Identifier: Apache-2.0
/*
 * A libjvm.so that is no HotSpot build we know, for the fallback test (hotspot_test.go): built
 * as a shared library named libjvm.so, it exports the VMStructs tables (gHotSpotVM*) with
 * every field the unwinder needs but Klass::_name (-DNO_KLASS_NAME), or none of them
 * (-DNO_TABLES). fake_spin() burns the CPU: its frames must stay native, and the profiler must
 * count why. The main program (-DMAIN) links it: fakejvm SECONDS.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#ifdef MAIN
double fake_spin(double seconds);

int main(int argc, char **argv)
{
	return fake_spin(argc > 1 ? atof(argv[1]) : 5) < 0;
}
#else

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) double fake_spin(double seconds)
{
	double end = now() + seconds, x = 1;

	while (now() < end)
		for (int i = 0; i < 100000; i++)
			x = x * 1.0000001 + 1e-9;
	return x;
}

#ifndef NO_TABLES
struct sentry {
	const char *type, *field, *typestr;
	int32_t is_static;
	uint64_t offset;
	void *address;
};
struct tentry {
	const char *type, *super;
	int32_t is_oop, is_int, is_unsigned;
	uint64_t size;
};
struct ientry {
	const char *name;
	int32_t value;
};

static void *heaps;
static struct sentry structs[] = {
	{ "CodeCache", "_heaps", "GrowableArray<CodeHeap*>*", 1, 0, &heaps },
	{ "GrowableArrayBase", "_len", "int", 0, 4, NULL },
	{ "GrowableArray<int>", "_data", "int*", 0, 8, NULL },
	{ "CodeHeap", "_memory", "VirtualSpace", 0, 8, NULL },
	{ "CodeHeap", "_segmap", "VirtualSpace", 0, 88, NULL },
	{ "CodeHeap", "_log2_segment_size", "int", 0, 176, NULL },
	{ "VirtualSpace", "_low_boundary", "char*", 0, 0, NULL },
	{ "VirtualSpace", "_high_boundary", "char*", 0, 8, NULL },
	{ "CodeBlob", "_name", "const char*", 0, 8, NULL },
	{ "CodeBlob", "_frame_complete_offset", "int", 0, 24, NULL },
	{ "CodeBlob", "_frame_size", "int", 0, 28, NULL },
	{ "CodeBlob", "_code_begin", "address", 0, 32, NULL },
	{ "CompiledMethod", "_method", "Method*", 0, 112, NULL },
	{ "nmethod", "_compile_id", "int", 0, 196, NULL },
	{ "Method", "_constMethod", "ConstMethod*", 0, 8, NULL },
	{ "ConstMethod", "_constants", "ConstantPool*", 0, 8, NULL },
	{ "ConstMethod", "_name_index", "u2", 0, 42, NULL },
	{ "ConstMethod", "_signature_index", "u2", 0, 44, NULL },
	{ "ConstantPool", "_pool_holder", "InstanceKlass*", 0, 24, NULL },
#ifndef NO_KLASS_NAME
	{ "Klass", "_name", "Symbol*", 0, 24, NULL },
#endif
	{ "Symbol", "_length", "u2", 0, 4, NULL },
	{ "Symbol", "_body", "u1", 0, 6, NULL },
	{ NULL, NULL, NULL, 0, 0, NULL },
};
static struct tentry types[] = {
	{ "HeapBlock", NULL, 0, 0, 0, 16 },
	{ "ConstMethod", NULL, 0, 0, 0, 56 },
	{ "ConstantPool", NULL, 0, 0, 0, 72 },
	{ NULL, NULL, 0, 0, 0, 0 },
};
static struct ientry ints[] = { { "frame::interpreter_frame_method_offset", -3 }, { NULL, 0 } };

struct sentry *gHotSpotVMStructs = structs;
uint64_t gHotSpotVMStructEntryTypeNameOffset = offsetof(struct sentry, type);
uint64_t gHotSpotVMStructEntryFieldNameOffset = offsetof(struct sentry, field);
uint64_t gHotSpotVMStructEntryTypeStringOffset = offsetof(struct sentry, typestr);
uint64_t gHotSpotVMStructEntryIsStaticOffset = offsetof(struct sentry, is_static);
uint64_t gHotSpotVMStructEntryOffsetOffset = offsetof(struct sentry, offset);
uint64_t gHotSpotVMStructEntryAddressOffset = offsetof(struct sentry, address);
uint64_t gHotSpotVMStructEntryArrayStride = sizeof(struct sentry);
struct tentry *gHotSpotVMTypes = types;
uint64_t gHotSpotVMTypeEntryTypeNameOffset = offsetof(struct tentry, type);
uint64_t gHotSpotVMTypeEntrySizeOffset = offsetof(struct tentry, size);
uint64_t gHotSpotVMTypeEntryArrayStride = sizeof(struct tentry);
struct ientry *gHotSpotVMIntConstants = ints;
uint64_t gHotSpotVMIntConstantEntryNameOffset = offsetof(struct ientry, name);
uint64_t gHotSpotVMIntConstantEntryValueOffset = offsetof(struct ientry, value);
uint64_t gHotSpotVMIntConstantEntryArrayStride = sizeof(struct ientry);
#endif
#endif
