package ebpfprofilerreceiver

import (
	"fmt"
	"math"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

// resourceToSamples moves every resource attribute of pd (service.name, process.pid,
// process.executable.*, container.id, OTEL_RESOURCE_ATTRIBUTES) onto the attributes of each
// sample under that resource, through the dictionary's attribute_table, and leaves the resources
// without attributes. A sample that already has an attribute of the same key keeps its own
// value (a sample never gets the same key twice).
//
// Why (resource_attributes_on_samples): on this collector line pdata's marshallers (protobuf,
// JSON, the gRPC client) always write resource and scope attribute keys as string-table indices
// (key_strindex) and their string values as string_value_strindex. A backend that reads only
// KeyValue.key there - Grafana Pyroscope 1.21 - sees an empty key: an int value (process.pid)
// becomes a label with an empty name and the whole export is refused (HTTP 400, "invalid label
// name" for the empty name), and service.name is lost. Sample attributes live in the dictionary's
// attribute_table (KeyValueAndUnit, always key_strindex), which every reader resolves, and
// which pdata leaves as it is.
func resourceToSamples(pd pprofile.Profiles) error {
	dict := pd.Dictionary()
	strs := dict.StringTable()
	table := dict.AttributeTable()
	if strs.Len() == 0 {
		strs.Append("")
	}
	if table.Len() == 0 {
		table.AppendEmpty()
	}
	strIdx := make(map[string]int32, strs.Len())
	for i, s := range strs.All() {
		if _, ok := strIdx[s]; !ok {
			strIdx[s] = int32(i)
		}
	}
	str := func(s string) (int32, error) {
		if i, ok := strIdx[s]; ok {
			return i, nil
		}
		if strs.Len() >= math.MaxInt32 {
			return 0, fmt.Errorf("the dictionary's string table is full")
		}
		strs.Append(s)
		strIdx[s] = int32(strs.Len() - 1)
		return strIdx[s], nil
	}
	// index of the attribute_table entries by key and value, built once
	type entry struct {
		key  int32
		unit int32
		val  string
	}
	valKey := func(v pcommon.Value) string { return v.Type().String() + "\x00" + v.AsString() }
	attrIdx := make(map[entry]int32, table.Len())
	for i, a := range table.All() {
		e := entry{a.KeyStrindex(), a.UnitStrindex(), valKey(a.Value())}
		if _, ok := attrIdx[e]; !ok {
			attrIdx[e] = int32(i)
		}
	}

	for _, rp := range pd.ResourceProfiles().All() {
		attrs := rp.Resource().Attributes()
		if attrs.Len() == 0 {
			continue
		}
		idx := make([]int32, 0, attrs.Len())
		keys := make([]int32, 0, attrs.Len())
		var err error
		attrs.Range(func(k string, v pcommon.Value) bool {
			var ki int32
			if ki, err = str(k); err != nil {
				return false
			}
			e := entry{ki, 0, valKey(v)}
			i, ok := attrIdx[e]
			if !ok {
				if table.Len() >= math.MaxInt32 {
					err = fmt.Errorf("the dictionary's attribute table is full")
					return false
				}
				kv := table.AppendEmpty()
				kv.SetKeyStrindex(ki)
				v.CopyTo(kv.Value())
				i = int32(table.Len() - 1)
				attrIdx[e] = i
			}
			idx = append(idx, i)
			keys = append(keys, ki)
			return true
		})
		if err != nil {
			return err
		}
		for _, sp := range rp.ScopeProfiles().All() {
			for _, prof := range sp.Profiles().All() {
				for _, smp := range prof.Samples().All() {
					own := smp.AttributeIndices()
					has := func(key int32) bool {
						for _, a := range own.All() {
							if int(a) < table.Len() && table.At(int(a)).KeyStrindex() == key {
								return true
							}
						}
						return false
					}
					for j, i := range idx {
						if !has(keys[j]) {
							own.Append(i)
						}
					}
				}
			}
		}
		attrs.Clear()
	}
	return nil
}
