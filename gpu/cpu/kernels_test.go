package cpu

import (
	"reflect"
	"testing"
)

// Each level's kernel table, for every level this machine runs, has an
// entry for every op and says which level it is: an op that reached a nil
// entry would panic mid-forward pass.
func TestKernelTablesComplete(t *testing.T) {
	for _, l := range supportedLevels() {
		k := kernelsAt(l)
		if k.level != l {
			t.Errorf("the %v table says it is %v", l, k.level)
		}
		v := reflect.ValueOf(k).Elem()
		for i := range v.NumField() {
			if f := v.Field(i); f.Kind() == reflect.Func && f.IsNil() {
				t.Errorf("the %v table has no %s kernel", l, v.Type().Field(i).Name)
			}
		}
	}
}
