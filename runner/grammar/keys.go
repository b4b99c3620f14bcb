package grammar

// Additional keys are distinct: an object that takes additional
// properties (a map, or others next to declared ones) refuses a key it has
// written before, as a client parsing the output would keep only the last
// (and count one property, short of minProperties). A key is a kPattern
// string marked isKey, whose frame keeps an FNV-1a hash of its value (its
// decoded bytes: one spelling per value, as such strings escape only what
// JSON must); each key written leaves a record (a frame of node keyRecord
// holding the hash) on the arena between the object and its parent, so
// the object's stack holds the hashes of its keys. A key whose hash is
// recorded is refused at its closing quote, so two different keys that
// collide are refused too (one in 4 billion): the grammar may then only
// write a longer key.
//
// The estimate counts a key that is a repeat one byte longer. It assumes
// some key a character longer than the shortest is new, which holds while
// an object has fewer keys than printable ASCII characters.

// keyRecord is the node of a record frame; n holds the key's hash.
const keyRecord int32 = -1

const (
	fnvOffset int32 = -2128831035 // 2166136261 as int32
	fnvPrime  int32 = 16777619
)

func fnvStep(h int32, c byte) int32 { return (h ^ int32(c)) * fnvPrime }

// recorded reports whether the records from arena index i on hold hash h.
func (m *matcher) recorded(i, h int32) bool {
	for ; i >= 0 && m.arena[i].top.node == keyRecord; i = m.arena[i].parent {
		if m.arena[i].top.n == h {
			return true
		}
	}
	return false
}

// skipRecords returns the arena index of the frame below the records
// starting at i, which belong to f, a closed object (any other frame has
// none below it).
func (m *matcher) skipRecords(i int32, f frame) int32 {
	if f.node >= 0 && m.g.nodes[f.node].kind == kObject && f.state != oClosed {
		return i // an open object keeps its records
	}
	for i >= 0 && m.arena[i].top.node == keyRecord {
		i = m.arena[i].parent
	}
	return i
}
