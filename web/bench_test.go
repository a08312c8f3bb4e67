package web

import (
	"hash/maphash"
	"net/http"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/internal/sessiongen"
)

// BenchmarkSessionPage5000 times a 5,000-entry session's page (sessiongen's
// session, 10.5 MB of JSON: a long-lived thread): the whole page over HTTP,
// one live-follow rebuild (build and render every piece: what each open
// page costs the server at every change of its thread), and the floor under
// both, reading the entries (LoadEntries).
func BenchmarkSessionPage5000(b *testing.B) {
	f := newFixture(b)
	f.prompt("alice", "start")
	entries := sessiongen.Entries(1, 5000)
	for i := range entries {
		entries[i].Seq = f.seq
		f.seq++
	}
	for i := 0; i < len(entries); i += 500 {
		if err := f.db.AppendEntries(f.ctx, f.sess.ID, entries[i:min(i+500, len(entries))]); err != nil {
			b.Fatal(err)
		}
	}
	s := New(Options{Store: f.db, Key: []byte(testKey), PublicURL: "https://bot.example.com"})
	srv := f.server(Options{})
	page := f.pageURL(srv, s)
	b.Run("LoadEntries", func(b *testing.B) {
		for b.Loop() {
			if es, err := f.db.LoadEntries(f.ctx, f.sess.ID); err != nil || len(es) != 5001 {
				b.Fatalf("LoadEntries = %d entries, %v", len(es), err)
			}
		}
	})
	b.Run("rebuild", func(b *testing.B) {
		for b.Loop() {
			p, err := s.build(f.ctx, f.thread.ID, "")
			if err != nil {
				b.Fatal(err)
			}
			if _, err := s.renderPieces(p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("GET", func(b *testing.B) {
		size := 0
		for b.Loop() {
			code, body := get(b, page, nil)
			if code != http.StatusOK {
				b.Fatalf("GET = %d", code)
			}
			size = len(body)
		}
		b.ReportMetric(float64(size)/1e6, "MB/page")
		b.Logf("the page: %s bytes", strconv.Itoa(size))
	})
}

// Every field of an item (and of its run) changes its fingerprint: a field
// the template reads and the fingerprint left out would let the live follow
// send a stale piece from the cache.
func TestFingerprintCoversEveryField(t *testing.T) {
	seed := maphash.MakeSeed()
	full := func() *item {
		it := &item{} // fill gives it a Run
		fill(reflect.ValueOf(it).Elem())
		fill(reflect.ValueOf(it.Run).Elem())
		return it
	}
	base := full().fingerprint(seed)
	if again := full().fingerprint(seed); again != base {
		t.Fatal("the same item has two fingerprints")
	}
	check := func(typ reflect.Type, at func(*item) reflect.Value) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			if !f.IsExported() {
				continue // not read by the template
			}
			it := full()
			change(at(it).Field(i))
			if it.fingerprint(seed) == base {
				t.Errorf("changing %s.%s leaves the fingerprint as it was", typ.Name(), f.Name)
			}
		}
	}
	check(reflect.TypeFor[item](), func(it *item) reflect.Value { return reflect.ValueOf(it).Elem() })
	check(reflect.TypeFor[runView](), func(it *item) reflect.Value { return reflect.ValueOf(it.Run).Elem() })
}

// fill gives every exported field of v a non-zero value.
func fill(v reflect.Value) {
	for i := range v.NumField() {
		if v.Type().Field(i).IsExported() {
			change(v.Field(i))
		}
	}
}

// change gives v another value.
func change(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(v.String() + "x")
	case reflect.Int, reflect.Int64:
		v.SetInt(v.Int() + 1)
	case reflect.Float64:
		v.SetFloat(v.Float() + 1)
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		} else {
			v.SetZero()
		}
	case reflect.Slice:
		e := reflect.New(v.Type().Elem()).Elem()
		if e.Kind() == reflect.Struct {
			fill(e)
		} else {
			change(e)
		}
		v.Set(reflect.Append(v, e))
	case reflect.Struct:
		if tm, ok := v.Addr().Interface().(*time.Time); ok {
			*tm = tm.Add(time.Second)
			return
		}
		panic("change: a struct field " + v.Type().String())
	default:
		panic("change: a field of kind " + v.Kind().String())
	}
}
