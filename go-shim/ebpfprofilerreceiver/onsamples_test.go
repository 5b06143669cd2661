package ebpfprofilerreceiver

import (
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

// fields splits one protobuf message into its fields: number -> raw values (varints as
// uint64, length-delimited as []byte).
func fields(t *testing.T, b []byte) map[protowire.Number][]any {
	t.Helper()
	out := map[protowire.Number][]any{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Fatalf("bad tag: %v", protowire.ParseError(n))
		}
		b = b[n:]
		switch typ {
		case protowire.VarintType:
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				t.Fatal("bad varint")
			}
			out[num] = append(out[num], v)
			b = b[m:]
		case protowire.BytesType:
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				t.Fatal("bad bytes")
			}
			out[num] = append(out[num], v)
			b = b[m:]
		default:
			m := protowire.ConsumeFieldValue(num, typ, b)
			if m < 0 {
				t.Fatal("bad field")
			}
			b = b[m:]
		}
	}
	return out
}

// wireResourceKVs is, per ResourceProfiles of an ExportProfilesServiceRequest, the fields of
// each resource attribute (KeyValue: key=1, value=2, key_strindex=3).
func wireResourceKVs(t *testing.T, req []byte) [][]map[protowire.Number][]any {
	var out [][]map[protowire.Number][]any
	for _, rp := range fields(t, req)[1] {
		var kvs []map[protowire.Number][]any
		for _, res := range fields(t, rp.([]byte))[1] {
			for _, kv := range fields(t, res.([]byte))[1] {
				kvs = append(kvs, fields(t, kv.([]byte)))
			}
		}
		out = append(out, kvs)
	}
	return out
}

// twoProcesses: two resources (process.pid int, service.name string), one profile each with
// two samples; the first sample of the second process has its own service.name.
func twoProcesses() pprofile.Profiles {
	pd := pprofile.NewProfiles()
	dict := pd.Dictionary()
	dict.StringTable().Append("", "service.name")
	dict.AttributeTable().AppendEmpty()
	own := dict.AttributeTable().AppendEmpty()
	own.SetKeyStrindex(1)
	own.Value().SetStr("sample-own")
	dict.StackTable().AppendEmpty()
	for i, svc := range []string{"checkout", "payment"} {
		rp := pd.ResourceProfiles().AppendEmpty()
		rp.Resource().Attributes().PutInt("process.pid", int64(100+i))
		rp.Resource().Attributes().PutStr("service.name", svc)
		prof := rp.ScopeProfiles().AppendEmpty().Profiles().AppendEmpty()
		for j := 0; j < 2; j++ {
			s := prof.Samples().AppendEmpty()
			s.Values().Append(1)
			if i == 1 && j == 0 {
				s.AttributeIndices().Append(1)
			}
		}
	}
	return pd
}

// What this collector line's pdata writes, and why the option exists: resource attribute keys
// leave as key_strindex, never as a plain key. When this fails, pdata writes plain keys again
// and resource_attributes_on_samples is no longer needed for Pyroscope.
func TestPdataWritesResourceKeysAsStrindex(t *testing.T) {
	for _, kvs := range wireResourceKVs(t, encode(twoProcesses())) {
		if len(kvs) != 2 {
			t.Fatalf("want 2 resource attributes on the wire, got %d", len(kvs))
		}
		for _, kv := range kvs {
			if len(kv[1]) != 0 || len(kv[3]) != 1 {
				t.Errorf("resource attribute written with key %q and key_strindex %v; "+
					"pdata now writes plain keys", kv[1], kv[3])
			}
		}
	}
}

func TestResourceAttributesOnSamples(t *testing.T) {
	pd := twoProcesses()
	if err := resourceToSamples(pd); err != nil {
		t.Fatal(err)
	}
	// what an exporter sends: no resource attribute left to be misread
	wire := encode(pd)
	for i, kvs := range wireResourceKVs(t, wire) {
		if len(kvs) != 0 {
			t.Errorf("resource %d still has %d attributes on the wire", i, len(kvs))
		}
	}
	// and every sample carries them, resolved through the dictionary
	back, err := decodeProfiles(wire)
	if err != nil {
		t.Fatal(err)
	}
	dict := back.Dictionary()
	want := []struct {
		pid int64
		svc []string // per sample
	}{{100, []string{"checkout", "checkout"}}, {101, []string{"sample-own", "payment"}}}
	if back.ResourceProfiles().Len() != 2 {
		t.Fatalf("%d resources", back.ResourceProfiles().Len())
	}
	for i, rp := range back.ResourceProfiles().All() {
		samples := rp.ScopeProfiles().At(0).Profiles().At(0).Samples()
		for j, s := range samples.All() {
			m, err := pprofile.FromAttributeIndices(dict.AttributeTable(), s, dict)
			if err != nil {
				t.Fatal(err)
			}
			if v, ok := m.Get("process.pid"); !ok || v.Type() != pcommon.ValueTypeInt ||
				v.Int() != want[i].pid {
				t.Errorf("process %d sample %d: process.pid = %v", i, j, m.AsRaw())
			}
			if v, _ := m.Get("service.name"); v.Str() != want[i].svc[j] {
				t.Errorf("process %d sample %d: service.name = %q, want %q", i, j, v.Str(),
					want[i].svc[j])
			}
			if s.AttributeIndices().Len() != 2 {
				t.Errorf("process %d sample %d: %d attributes, want 2 (no duplicate key)", i,
					j, s.AttributeIndices().Len())
			}
		}
	}
	// one table entry per distinct attribute: "", sample-own, pid 100, checkout, pid 101,
	// payment
	if n := dict.AttributeTable().Len(); n != 6 {
		t.Errorf("attribute table has %d entries, want 6", n)
	}
}
