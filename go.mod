module folio

go 1.26

require (
	github.com/dlclark/regexp2 v1.11.5
	github.com/spf13/cobra v1.10.2
	github.com/spf13/pflag v1.0.9
	golang.org/x/text v0.40.0
)

require github.com/inconshreveable/mousetrap v1.1.0 // indirect
