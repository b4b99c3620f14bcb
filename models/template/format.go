package template

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// percentFormat is Python's "format % args" (and the format filter).
func (e *evaluator) percentFormat(format string, args Value) (Value, error) {
	// As CPython: a tuple holds the arguments; anything else is the one
	// argument, and one that can be indexed (a dict, a list, an undefined)
	// may also serve %(key)s and need not be used up.
	var pos []Value
	mapping, _ := args.(*dict)
	isMap := false
	switch a := args.(type) {
	case *list:
		isMap = !a.tuple
		pos = a.items
		if isMap {
			pos = []Value{args}
		}
	case *dict, *undefined:
		isMap = true
		pos = []Value{args}
	default:
		pos = []Value{args}
	}
	used := 0
	next := func() (Value, error) {
		if used >= len(pos) {
			return nil, typeErrorf("not enough arguments for format string")
		}
		used++
		return pos[used-1], nil
	}
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(format) {
			return nil, typeErrorf("incomplete format")
		}
		var arg Value
		hasArg := false
		if format[i] == '(' {
			end := strings.IndexByte(format[i:], ')')
			if end < 0 {
				return nil, typeErrorf("incomplete format key")
			}
			if !isMap {
				return nil, typeErrorf("format requires a mapping")
			}
			if mapping == nil {
				return nil, typeErrorf("%s indices must be integers or slices, not str", typeName(args))
			}
			key := format[i+1 : i+end]
			v, ok := mapping.get(key)
			if !ok {
				return nil, typeErrorf("%s", reprString(key))
			}
			arg, hasArg = v, true
			i += end + 1
		}
		start := i
		for i < len(format) && strings.IndexByte("-+ #0", format[i]) >= 0 {
			i++
		}
		flags := format[start:i]
		width, prec := "", ""
		for ; i < len(format) && format[i] >= '0' && format[i] <= '9'; i++ {
			width += string(format[i])
		}
		if i < len(format) && format[i] == '.' {
			prec = "."
			for i++; i < len(format) && format[i] >= '0' && format[i] <= '9'; i++ {
				prec += string(format[i])
			}
		}
		for i < len(format) && strings.IndexByte("hlL", format[i]) >= 0 {
			i++
		}
		if i >= len(format) {
			return nil, typeErrorf("incomplete format")
		}
		if w, _ := strconv.Atoi(width); w > e.lim.MaxOutput || len(width) > 9 {
			return nil, limitErrorf("format width %s exceeds the limit", width)
		}
		if p, _ := strconv.Atoi(strings.TrimPrefix(prec, ".")); p > e.lim.MaxOutput || len(prec) > 10 {
			return nil, limitErrorf("format precision %s exceeds the limit", prec)
		}
		conv := format[i]
		if conv == '%' {
			b.WriteByte('%')
			continue
		}
		if !hasArg {
			var err error
			if arg, err = next(); err != nil {
				return nil, err
			}
		}
		s, err := e.formatOne(conv, flags, width, prec, arg)
		if err != nil {
			return nil, err
		}
		if err := e.charge(b.Len() + len(s)); err != nil {
			return nil, err
		}
		b.WriteString(s)
	}
	if !isMap && used < len(pos) {
		return nil, typeErrorf("not all arguments converted during string formatting")
	}
	return b.String(), nil
}

// formatOne formats one %-conversion.
func (e *evaluator) formatOne(conv byte, flags, width, prec string, arg Value) (string, error) {
	spec := "%" + flags + width + prec
	switch conv {
	case 's', 'r', 'a':
		s, err := e.strChecked(arg)
		if conv != 's' {
			s, err = e.reprChecked(arg)
		}
		if err != nil {
			return "", err
		}
		return fmt.Sprintf(strings.ReplaceAll(spec, "0", "")+"s", s), nil
	case 'd', 'i', 'u':
		f, i, isFloat, ok := asNumber(arg)
		if !ok {
			return "", typeErrorf("%%%c format: a real number is required, not %s", conv, typeName(arg))
		}
		if isFloat {
			i = int64(f)
		}
		return fmt.Sprintf(spec+"d", i), nil
	case 'x', 'X', 'o':
		i, ok := asInt(arg)
		if !ok {
			return "", typeErrorf("%%%c format: an integer is required, not %s", conv, typeName(arg))
		}
		return fmt.Sprintf(spec+string(conv), i), nil
	case 'f', 'F', 'e', 'E', 'g', 'G':
		f, _, _, ok := asNumber(arg)
		if !ok {
			return "", typeErrorf("must be real number, not %s", typeName(arg))
		}
		if prec == "" && (conv == 'g' || conv == 'G') {
			spec += ".6" // Python's default; Go's %g is the shortest repr
		}
		return fmt.Sprintf(spec+string(conv), f), nil
	case 'c':
		if i, ok := asInt(arg); ok && i >= 0 && i <= 0x10ffff {
			return fmt.Sprintf(spec+"c", rune(i)), nil
		}
		if s, ok := arg.(string); ok && runeLen(s) == 1 {
			return fmt.Sprintf(spec+"s", s), nil
		}
		return "", typeErrorf("%%c requires int or char")
	}
	return "", typeErrorf("unsupported format character '%c'", conv)
}

// strFormat is str.format with positional and keyword fields and a format
// spec of [[fill]align][sign][width][.precision][type].
func (e *evaluator) strFormat(format string, args []Value, kw *kwargs) (Value, error) {
	var b strings.Builder
	auto := 0
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c == '}' {
			if i+1 < len(format) && format[i+1] == '}' {
				i++
			}
			b.WriteByte('}')
			continue
		}
		if c != '{' {
			b.WriteByte(c)
			continue
		}
		if i+1 < len(format) && format[i+1] == '{' {
			b.WriteByte('{')
			i++
			continue
		}
		end := strings.IndexByte(format[i:], '}')
		if end < 0 {
			return nil, typeErrorf("Single '{' encountered in format string")
		}
		field := format[i+1 : i+end]
		i += end
		name, spec, _ := strings.Cut(field, ":")
		name, _, _ = strings.Cut(name, "!")
		var arg Value
		if name == "" {
			if auto >= len(args) {
				return nil, typeErrorf("Replacement index %d out of range for positional args tuple", auto)
			}
			arg = args[auto]
			auto++
		} else if n, err := strconv.Atoi(name); err == nil {
			if n >= len(args) {
				return nil, typeErrorf("Replacement index %d out of range for positional args tuple", n)
			}
			arg = args[n]
		} else {
			v, ok := kw.take(name)
			if !ok {
				return nil, typeErrorf("%s", reprString(name))
			}
			kw.add(name, v)
			arg = v
		}
		s, err := e.formatSpec(arg, spec)
		if err != nil {
			return nil, err
		}
		if err := e.charge(b.Len() + len(s)); err != nil {
			return nil, err
		}
		b.WriteString(s)
	}
	return b.String(), nil
}

func (e *evaluator) formatSpec(arg Value, spec string) (string, error) {
	if spec == "" {
		return e.strChecked(arg)
	}
	limit := e.lim.MaxOutput
	fill, align := " ", byte(0)
	r := []rune(spec)
	if len(r) >= 2 && strings.ContainsRune("<>^=", r[1]) {
		fill, align, r = string(r[0]), byte(r[1]), r[2:]
	} else if len(r) >= 1 && strings.ContainsRune("<>^=", r[0]) {
		align, r = byte(r[0]), r[1:]
	}
	rest := string(r)
	typ := byte(0)
	if rest != "" && strings.IndexByte("sdfFeEgGxXo%", rest[len(rest)-1]) >= 0 {
		typ, rest = rest[len(rest)-1], rest[:len(rest)-1]
	}
	widthStr, prec, _ := strings.Cut(rest, ".")
	widthStr = strings.TrimLeft(widthStr, "+- 0")
	width, _ := strconv.Atoi(widthStr)
	if width > limit || len(widthStr) > 9 || len(prec) > 4 {
		return "", limitErrorf("format width exceeds the limit")
	}
	var s string
	var err error
	switch typ {
	case 0, 's':
		if s, err = e.strChecked(arg); err != nil {
			return "", err
		}
		if prec != "" {
			p, _ := strconv.Atoi(prec)
			if rs := []rune(s); p < len(rs) {
				s = string(rs[:p])
			}
		}
	case '%':
		f, _, _, _ := asNumber(arg)
		s, err = e.formatOne('f', "", "", "."+or6(prec), f*100)
		s += "%"
	default:
		p := ""
		if prec != "" {
			p = "." + prec
		}
		s, err = e.formatOne(typ, "", "", p, arg)
	}
	if err != nil {
		return "", err
	}
	if pad := width - runeLen(s); pad > 0 {
		if align == 0 {
			align = '<'
			if _, _, _, ok := asNumber(arg); ok {
				align = '>'
			}
		}
		switch align {
		case '>', '=':
			s = strings.Repeat(fill, pad) + s
		case '^':
			s = strings.Repeat(fill, pad/2) + s + strings.Repeat(fill, pad-pad/2)
		default:
			s += strings.Repeat(fill, pad)
		}
	}
	return s, nil
}

func or6(prec string) string {
	if prec == "" {
		return "6"
	}
	return prec
}

// strftime formats t as Python's time.strftime does on glibc, for the
// directives chat templates use.
func strftime(t time.Time, format string) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' || i+1 >= len(format) {
			b.WriteByte(c)
			continue
		}
		i++
		pad := true
		if format[i] == '-' && i+1 < len(format) {
			pad = false
			i++
		}
		num := func(v, width int) {
			if pad {
				fmt.Fprintf(&b, "%0*d", width, v)
			} else {
				fmt.Fprintf(&b, "%d", v)
			}
		}
		hour12 := t.Hour() % 12
		if hour12 == 0 {
			hour12 = 12
		}
		switch format[i] {
		case 'a':
			b.WriteString(t.Weekday().String()[:3])
		case 'A':
			b.WriteString(t.Weekday().String())
		case 'b', 'h':
			b.WriteString(t.Month().String()[:3])
		case 'B':
			b.WriteString(t.Month().String())
		case 'd':
			num(t.Day(), 2)
		case 'e':
			fmt.Fprintf(&b, "%2d", t.Day())
		case 'm':
			num(int(t.Month()), 2)
		case 'y':
			num(t.Year()%100, 2)
		case 'Y':
			fmt.Fprintf(&b, "%d", t.Year())
		case 'H':
			num(t.Hour(), 2)
		case 'I':
			num(hour12, 2)
		case 'M':
			num(t.Minute(), 2)
		case 'S':
			num(t.Second(), 2)
		case 'p':
			b.WriteString(map[bool]string{true: "PM", false: "AM"}[t.Hour() >= 12])
		case 'j':
			num(t.YearDay(), 3)
		case 'w':
			fmt.Fprintf(&b, "%d", int(t.Weekday()))
		case 'u':
			fmt.Fprintf(&b, "%d", (int(t.Weekday())+6)%7+1)
		case 'F':
			fmt.Fprintf(&b, "%d-%02d-%02d", t.Year(), int(t.Month()), t.Day())
		case 'D':
			fmt.Fprintf(&b, "%02d/%02d/%02d", int(t.Month()), t.Day(), t.Year()%100)
		case 'T':
			fmt.Fprintf(&b, "%02d:%02d:%02d", t.Hour(), t.Minute(), t.Second())
		case 'c':
			b.WriteString(t.Format("Mon Jan  2 15:04:05 2006"))
		case 'x':
			fmt.Fprintf(&b, "%02d/%02d/%02d", int(t.Month()), t.Day(), t.Year()%100)
		case 'X':
			fmt.Fprintf(&b, "%02d:%02d:%02d", t.Hour(), t.Minute(), t.Second())
		case 'Z', 'z':
		case '%':
			b.WriteByte('%')
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		default:
			b.WriteByte('%')
			b.WriteByte(format[i])
		}
	}
	return b.String()
}
