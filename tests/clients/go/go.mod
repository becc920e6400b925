module smolder.test/pushpprof

go 1.19
