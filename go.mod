module plug.directory/prober

go 1.26.8
