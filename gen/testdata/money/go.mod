module example.com/money

go 1.26
