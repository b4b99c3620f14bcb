// Package installer pulls models from the Ollama registry, Hugging Face and
// plain URLs: resumable, verified, with progress. Arrives with the installer
// issue.
package installer
