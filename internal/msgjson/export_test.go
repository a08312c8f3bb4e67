package msgjson

// InternedValue exposes internedValue to the external tests.
var InternedValue = internedValue
