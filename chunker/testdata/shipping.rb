# frozen_string_literal: true

require "json"
require_relative "carrier"

module Shipping
  # Raised when no carrier can take a parcel.
  class NoCarrierError < StandardError; end

  # Picks the cheapest carrier for a parcel.
  class Quoter
    attr_reader :carriers

    # Creates a quoter over a list of carriers.
    def initialize(carriers)
      @carriers = carriers
      @cache = {}
    end

    # Returns the cheapest quote for weight (kg) to a destination country.
    def cheapest(weight, country)
      key = [weight.round(1), country]
      @cache[key] ||= begin
        quotes = carriers.filter_map do |c|
          next unless c.serves?(country) && weight <= c.max_weight

          { carrier: c.name, price: c.price(weight, country) }
        end
        raise NoCarrierError, "no carrier for #{country}" if quotes.empty?

        quotes.min_by { |q| q[:price] }
      end
    end

    def to_json(*args)
      { carriers: carriers.map(&:name) }.to_json(*args)
    end

    def self.from_config(path)
      data = JSON.parse(File.read(path))
      new(data.fetch("carriers").map { |c| Carrier.new(**c.transform_keys(&:to_sym)) })
    end
  end
end
