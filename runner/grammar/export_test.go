package grammar

// Validate and SchemaSet serve the end-to-end tests of package
// grammar_test, which run the engine (a package that imports this one).
var (
	Validate  = validate
	SchemaSet = schemaSet
)
