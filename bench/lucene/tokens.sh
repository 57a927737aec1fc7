#!/usr/bin/env bash
# Prints Lucene 8 EnglishAnalyzer's terms of each line of stdin (LuceneTokens.java).
# Needs Debian's liblucene8-java and a JDK.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
CP=$(ls /usr/share/java/lucene-core-8*.jar | head -1):$(ls /usr/share/java/lucene-analyzers-common-8*.jar | head -1)
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
javac -d "$build" -cp "$CP" "$here/LuceneTokens.java"
java -cp "$build:$CP" LuceneTokens
