module github.com/idalloc/idalloc

go 1.26.8
