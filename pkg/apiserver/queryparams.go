package apiserver

import (
	"fmt"
	"net/url"
	"reflect"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
)

// The options of connect-style subresources (pods/log, exec, attach, portforward) arrive as
// query parameters; the request handler decodes them with the scheme's parameter codec, which
// needs a url.Values → options conversion. Kubernetes generates one per type; berth has no
// generated conversions, so one reflective conversion serves them all: every field is read from
// the parameter named by its JSON tag, with the meanings Kubernetes' generated code gives the
// values (the first value counts; "false" and "0" are false; an absent parameter is the zero
// value).

// queryParameterTypes are the option types decoded from a query.
var queryParameterTypes = []runtime.Object{
	&corev1.PodLogOptions{},
	&corev1.PodExecOptions{},
	&corev1.PodAttachOptions{},
	&corev1.PodPortForwardOptions{},
	&corev1.NodeProxyOptions{},
	&corev1.PodProxyOptions{},
	&corev1.ServiceProxyOptions{},
}

// registerQueryParameterConversions adds the url.Values conversions of queryParameterTypes.
func registerQueryParameterConversions(s *runtime.Scheme) error {
	for _, obj := range queryParameterTypes {
		if err := s.AddConversionFunc((*url.Values)(nil), obj, func(a, b interface{}, _ conversion.Scope) error {
			return decodeQueryParameters(*a.(*url.Values), b)
		}); err != nil {
			return fmt.Errorf("registering the query parameter conversion of %T: %w", obj, err)
		}
	}
	return nil
}

var (
	timeType     = reflect.TypeOf(metav1.Time{})
	timePtrType  = reflect.TypeOf(&metav1.Time{})
	typeMetaType = reflect.TypeOf(metav1.TypeMeta{})
)

// decodeQueryParameters sets every field of the struct that into points to from the parameter
// named by the field's JSON tag. Embedded structs other than TypeMeta are walked into.
func decodeQueryParameters(values url.Values, into interface{}) error {
	v := reflect.ValueOf(into)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("cannot decode query parameters into %T", into)
	}
	return decodeStruct(values, v.Elem())
}

func decodeStruct(values url.Values, v reflect.Value) error {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		if f.Anonymous {
			if f.Type == typeMetaType || f.Type.Kind() != reflect.Struct {
				continue
			}
			if err := decodeStruct(values, v.Field(i)); err != nil {
				return err
			}
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		field := v.Field(i)
		field.SetZero()
		in := values[name]
		if len(in) == 0 {
			continue
		}
		if err := decodeField(in, field); err != nil {
			return fmt.Errorf("query parameter %q: %w", name, err)
		}
	}
	return nil
}

// decodeField sets field from the parameter's values in (at least one).
func decodeField(in []string, field reflect.Value) error {
	switch field.Type() {
	case timeType:
		return field.Addr().Interface().(*metav1.Time).UnmarshalQueryParameter(in[0])
	case timePtrType:
		t := &metav1.Time{}
		if err := t.UnmarshalQueryParameter(in[0]); err != nil {
			return err
		}
		field.Set(reflect.ValueOf(t))
		return nil
	}
	switch field.Kind() {
	case reflect.Pointer:
		elem := reflect.New(field.Type().Elem())
		if err := decodeScalar(in, elem.Elem()); err != nil {
			return err
		}
		field.Set(elem)
		return nil
	case reflect.Slice:
		return decodeSlice(in, field)
	default:
		return decodeScalar(in, field)
	}
}

// decodeScalar sets a string, bool or integer from the first value.
func decodeScalar(in []string, field reflect.Value) error {
	s := in[0]
	switch field.Kind() {
	case reflect.String:
		field.SetString(s)
	case reflect.Bool:
		field.SetBool(!(s == "0" || strings.EqualFold(s, "false")))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(s, 10, field.Type().Bits())
		if err != nil {
			return err
		}
		field.SetInt(n)
	default:
		return fmt.Errorf("unsupported field type %s", field.Type())
	}
	return nil
}

// decodeSlice takes every value: strings as they are (exec's repeated command), integers also
// from comma-separated lists, as port numbers (port-forward's ports=80,443).
func decodeSlice(in []string, field reflect.Value) error {
	elem := field.Type().Elem()
	out := reflect.MakeSlice(field.Type(), 0, len(in))
	switch elem.Kind() {
	case reflect.String:
		for _, s := range in {
			out = reflect.Append(out, reflect.ValueOf(s).Convert(elem))
		}
	case reflect.Int32:
		for _, s := range in {
			for _, part := range strings.Split(s, ",") {
				n, err := strconv.ParseUint(part, 10, 16)
				if err != nil {
					return fmt.Errorf("cannot convert to []int32: %w", err)
				}
				out = reflect.Append(out, reflect.ValueOf(int32(n)).Convert(elem))
			}
		}
	default:
		return fmt.Errorf("unsupported field type %s", field.Type())
	}
	field.Set(out)
	return nil
}
